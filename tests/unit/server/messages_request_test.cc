// Anthropic's Messages bodies read into the typed request: the conversation as chat messages a
// template reads (system first, tool_use as tool calls, tool_result as tool messages), tools as
// function entries in the client's key order, tool_choice, sampling and metadata; and each
// refusal naming its field.
#include "server/anthropic/messages_request.h"

#include <gtest/gtest.h>

#include <string>

#include "base/status_details.h"

namespace kvd::server::anthropic {
namespace {

using json = nlohmann::json;

CompletionRequest Read(const std::string& body,
                       MessagesEndpoint endpoint = MessagesEndpoint::kCreate) {
  auto request = ReadMessagesRequest(body, endpoint);
  EXPECT_TRUE(request.ok()) << request.status();
  return request.ok() ? *std::move(request) : CompletionRequest{};
}

TEST(MessagesRequestTest, ReadsTheConversationAsChatMessages) {
  const CompletionRequest request = Read(R"({
    "model": "kvd-tiny", "max_tokens": 64,
    "system": [{"type": "text", "text": "Be "}, {"type": "text", "text": "brief.",
                "cache_control": {"type": "ephemeral"}}],
    "messages": [
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
         "input": {"unit": "C", "city": "Paris"}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1",
         "content": [{"type": "text", "text": "sunny"}], "is_error": true},
        {"type": "text", "text": "And tomorrow?"}]}]})");
  const json expected = json::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "Looking.", "tool_calls": [
      {"id": "toolu_1", "type": "function",
       "function": {"name": "get_weather", "arguments": "{\"unit\":\"C\",\"city\":\"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "toolu_1", "content": "sunny", "is_error": true},
    {"role": "user", "content": "And tomorrow?"}])");
  EXPECT_EQ(request.messages, expected);
  EXPECT_EQ(request.kind, ApiKind::kChat);
  EXPECT_EQ(request.model, "kvd-tiny");
  EXPECT_EQ(request.max_tokens, 64);
  EXPECT_FALSE(request.add_generation_prompt.has_value());
}

TEST(MessagesRequestTest, AnAssistantTurnLastIsContinued) {
  const CompletionRequest request = Read(R"({"max_tokens": 5, "messages": [
    {"role": "user", "content": "Say hi"}, {"role": "assistant", "content": "Hi"}]})");
  EXPECT_EQ(request.add_generation_prompt, false);
}

TEST(MessagesRequestTest, ReadsToolsChoiceAndSampling) {
  const CompletionRequest request = Read(R"({
    "max_tokens": 10, "messages": [{"role": "user", "content": "x"}],
    "tools": [{"name": "get_weather", "description": "Weather",
               "input_schema": {"type": "object", "properties": {"z": {}, "a": {}}}}],
    "tool_choice": {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": true},
    "temperature": 0.5, "top_p": 0.9, "top_k": 7, "stop_sequences": ["\n\n", "END"],
    "stream": true, "metadata": {"user_id": "u-1"}})");
  ASSERT_EQ(request.tools.size(), 1u);
  EXPECT_EQ(request.tools[0].name, "get_weather");
  // The client's key order, as the template prints it.
  EXPECT_EQ(request.tools[0].entry.dump(),
            R"({"type":"function","function":{"name":"get_weather","description":"Weather",)"
            R"("parameters":{"type":"object","properties":{"z":{},"a":{}}}}})");
  ASSERT_TRUE(request.tool_choice.has_value());
  EXPECT_EQ(*request.tool_choice, (ToolChoice{ToolChoice::Kind::kFunction, "get_weather"}));
  EXPECT_FALSE(request.parallel_tool_calls);
  EXPECT_EQ(SentSampling(request, "temperature"), 0.5);
  EXPECT_EQ(SentSampling(request, "top_p"), 0.9);
  EXPECT_EQ(SentSampling(request, "top_k"), 7);
  EXPECT_EQ(request.stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_TRUE(request.stream);
  EXPECT_EQ(request.user, "u-1");

  for (const auto& [choice, kind] :
       {std::pair{"auto", ToolChoice::Kind::kAuto}, std::pair{"any", ToolChoice::Kind::kRequired},
        std::pair{"none", ToolChoice::Kind::kNone}}) {
    const CompletionRequest chosen =
        Read(absl::StrCat(R"({"max_tokens": 1, "messages": [{"role": "user", "content": "x"}],
                             "tool_choice": {"type": ")",
                          choice, R"("}})"));
    EXPECT_EQ(chosen.tool_choice->kind, kind) << choice;
  }
}

TEST(MessagesRequestTest, CountTokensNeedsNoMaxTokens) {
  const CompletionRequest request =
      Read(R"({"model": "m", "messages": [{"role": "user", "content": "x"}]})",
           MessagesEndpoint::kCountTokens);
  EXPECT_FALSE(request.max_tokens.has_value());
  // Sampling fields are not count_tokens'.
  EXPECT_FALSE(
      ReadMessagesRequest(R"({"max_tokens": 4, "messages": [{"role": "user", "content": "x"}]})",
                          MessagesEndpoint::kCountTokens)
          .ok());
}

TEST(MessagesRequestTest, RefusalsNameTheirField) {
  struct Case {
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {R"({"messages": [{"role": "user", "content": "x"}]})", "max_tokens"},
      {R"({"max_tokens": 0, "messages": [{"role": "user", "content": "x"}]})", "max_tokens"},
      {R"({"max_tokens": 1, "messages": []})", "messages"},
      {R"({"max_tokens": 1, "messages": [{"role": "system", "content": "x"}]})",
       "messages[0].role"},
      {R"({"max_tokens": 1, "messages": [{"role": "user", "content": [{"type": "image",
          "source": {}}]}]})",
       "messages[0].content[0]"},
      {R"({"max_tokens": 1, "messages": [{"role": "user", "content": [{"type": "tool_result"}]}]})",
       "messages[0].content[0].tool_use_id"},
      {R"({"max_tokens": 1, "messages": [{"role": "assistant", "content": [{"type": "tool_use",
          "id": "a", "name": "f", "input": [1]}]}]})",
       "messages[0].content[0].input"},
      {R"({"max_tokens": 1, "messages": [{"role": "assistant", "content": [{"type": "thinking",
          "thinking": "hm"}]}]})",
       "messages[0].content[0]"},
      {R"({"max_tokens": 1, "thinking": {"type": "enabled", "budget_tokens": 1024},
          "messages": [{"role": "user", "content": "x"}]})",
       "thinking"},
      {R"({"max_tokens": 1, "tools": [{"type": "web_search_20250305", "name": "web_search"}],
          "messages": [{"role": "user", "content": "x"}]})",
       "tools[0]"},
      {R"({"max_tokens": 1, "tools": [{"name": "f"}], "messages": [{"role": "user",
          "content": "x"}]})",
       "tools[0].input_schema"},
      {R"({"max_tokens": 1, "tool_choice": {"type": "tool"}, "messages": [{"role": "user",
          "content": "x"}]})",
       "tool_choice"},
      {R"({"max_tokens": 1, "mcp_servers": [], "messages": [{"role": "user", "content": "x"}]})",
       "mcp_servers"},
      {R"({"max_tokens": 1, "metadata": {"plan": "x"}, "messages": [{"role": "user",
          "content": "x"}]})",
       "metadata"},
      {R"({"max_tokens": 1, "system": 3, "messages": [{"role": "user", "content": "x"}]})",
       "system"},
      {R"({"max_tokens": 1, "top_k": 1.5, "messages": [{"role": "user", "content": "x"}]})",
       "top_k"},
  };
  for (const Case& c : cases) {
    auto request = ReadMessagesRequest(c.body, MessagesEndpoint::kCreate);
    ASSERT_FALSE(request.ok()) << c.body;
    EXPECT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument) << c.body;
    EXPECT_EQ(ParamOf(request.status()), c.param) << c.body << "\n" << request.status();
  }
  EXPECT_FALSE(ReadMessagesRequest("[1]", MessagesEndpoint::kCreate).ok());
  EXPECT_FALSE(ReadMessagesRequest("{", MessagesEndpoint::kCreate).ok());
}

}  // namespace
}  // namespace kvd::server::anthropic
