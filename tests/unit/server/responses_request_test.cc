// Responses API bodies read into the typed request: input as a string or items (normalized),
// instructions, function tools in the client's key order, tool_choice, text.format as a
// constraint, metadata limits; the conversation a chat template reads; and each refusal naming
// its field.
#include "server/responses/responses_request.h"

#include <gtest/gtest.h>

#include <string>

#include "base/status_details.h"

namespace kvd::server::responses {
namespace {

using json = nlohmann::json;
using structured::JsonValue;

ResponsesRequest Read(const std::string& body) {
  auto request = ReadResponsesRequest(body);
  EXPECT_TRUE(request.ok()) << request.status();
  return request.ok() ? *std::move(request) : ResponsesRequest{};
}

TEST(ResponsesRequestTest, AStringInputIsOneUserMessage) {
  const ResponsesRequest request =
      Read(R"({"model": "m", "input": "Hi", "instructions": "Be\n brief.",
    "max_output_tokens": 12, "temperature": 0.5, "store": false})");
  EXPECT_EQ(request.input_items,
            JsonValue::parse(R"([{"type": "message", "role": "user", "content": "Hi"}])"));
  EXPECT_EQ(request.instructions, "Be\n brief.");
  EXPECT_EQ(request.completion.max_tokens, 12);
  EXPECT_EQ(SentSampling(request.completion, "temperature"), 0.5);
  EXPECT_FALSE(request.store);
  EXPECT_EQ(ConversationMessages(request.instructions, request.input_items),
            json::parse(R"([{"role": "system", "content": "Be\n brief."},
                            {"role": "user", "content": "Hi"}])"));
}

TEST(ResponsesRequestTest, ItemsBecomeTheConversation) {
  const ResponsesRequest request = Read(R"({"input": [
    {"role": "developer", "content": "Rules."},
    {"role": "user", "content": [{"type": "input_text", "text": "Weather "},
                                 {"type": "input_text", "text": "in Paris?"}]},
    {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
     "content": [{"type": "output_text", "text": "Looking.", "annotations": []}]},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
     "arguments": "{\"city\":\"Paris\"}", "status": "completed"},
    {"type": "function_call", "call_id": "call_2", "name": "now", "arguments": ""},
    {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
    {"type": "function_call_output", "call_id": "call_2",
     "output": [{"type": "input_text", "text": "noon"}]}]})");
  EXPECT_EQ(ConversationMessages(std::nullopt, request.input_items), json::parse(R"([
    {"role": "system", "content": "Rules."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "Looking.", "tool_calls": [
      {"id": "call_1", "type": "function",
       "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
      {"id": "call_2", "type": "function", "function": {"name": "now", "arguments": ""}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    {"role": "tool", "tool_call_id": "call_2", "content": "noon"}])"));
  // Normalized items read back as themselves (what the store keeps is checked this way).
  auto again = NormalizeItems(request.input_items, "stored");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, request.input_items);
}

TEST(ResponsesRequestTest, ReadsToolsChoiceFormatAndMetadata) {
  const ResponsesRequest request = Read(R"({"input": "x",
    "tools": [{"type": "function", "name": "get_weather", "strict": true,
               "parameters": {"type": "object", "properties": {"z": {}, "a": {}}}}],
    "tool_choice": {"type": "function", "name": "get_weather"}, "parallel_tool_calls": false,
    "text": {"format": {"type": "json_schema", "name": "p", "strict": true,
                        "schema": {"type": "object", "properties": {"b": {}, "a": {}}}}},
    "metadata": {"k": "v"}, "seed": 7, "top_k": 3, "truncation": "disabled", "reasoning": {},
    "include": [], "service_tier": "auto", "prompt_cache_key": "c"})");
  ASSERT_EQ(request.completion.tools.size(), 1u);
  EXPECT_EQ(request.completion.tools[0].entry.dump(),
            R"({"type":"function","function":{"name":"get_weather","parameters":)"
            R"({"type":"object","properties":{"z":{},"a":{}}},"strict":true}})");
  EXPECT_EQ(*request.completion.tool_choice,
            (ToolChoice{ToolChoice::Kind::kFunction, "get_weather"}));
  EXPECT_FALSE(request.completion.parallel_tool_calls);
  ASSERT_TRUE(request.completion.structured_output.has_value());
  EXPECT_EQ(request.completion.structured_output->kind,
            structured::ConstraintSpec::Kind::kJsonSchema);
  EXPECT_EQ(request.completion.structured_output->text,
            R"({"type":"object","properties":{"b":{},"a":{}}})");
  EXPECT_EQ(request.completion.structured_output_param, "text.format.schema");
  EXPECT_EQ(request.metadata, JsonValue::parse(R"({"k": "v"})"));
  EXPECT_EQ(request.completion.seed, 7);
  EXPECT_EQ(SentSampling(request.completion, "top_k"), 3);
}

TEST(ResponsesRequestTest, RefusalsNameTheirField) {
  struct Case {
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {R"({"model": "m"})", "input"},
      {R"({"input": []})", "input"},
      {R"({"input": [{"role": "tool", "content": "x"}]})", "input[0].role"},
      {R"({"input": [{"role": "user", "content": [{"type": "input_image"}]}]})",
       "input[0].content[0]"},
      {R"({"input": [{"role": "assistant", "content": [{"type": "input_text", "text": "x"}]}]})",
       "input[0].content[0]"},
      {R"({"input": [{"type": "reasoning", "summary": []}]})", "input[0]"},
      {R"({"input": [{"type": "function_call", "call_id": "c", "name": "f",
          "arguments": "[1]"}]})",
       "input[0].arguments"},
      {R"({"input": [{"type": "function_call_output", "output": "x"}]})", "input[0].call_id"},
      {R"({"input": "x", "tools": [{"type": "web_search"}]})", "tools[0]"},
      {R"({"input": "x", "tools": [{"type": "function", "name": "a b"}]})", "tools[0]"},
      {R"({"input": "x", "tool_choice": "sometimes"})", "tool_choice"},
      {R"({"input": "x", "text": {"format": {"type": "xml"}}})", "text.format.type"},
      {R"({"input": "x", "text": {"format": {"type": "json_schema", "schema": {}}}})",
       "text.format.name"},
      {R"({"input": "x", "reasoning": {"effort": "high"}})", "reasoning"},
      {R"({"input": "x", "background": true})", "background"},
      {R"({"input": "x", "include": ["message.output_text.logprobs"]})", "include"},
      {R"({"input": "x", "truncation": "auto"})", "truncation"},
      {R"({"input": "x", "conversation": "conv_1"})", "conversation"},
      {R"({"input": "x", "max_output_tokens": 0})", "max_output_tokens"},
      {R"({"input": "x", "metadata": {"k": 1}})", "metadata"},
      {R"({"input": "x", "store": "yes"})", "store"},
      {R"({"input": "x", "previous_response_id": 3})", "previous_response_id"},
  };
  for (const Case& c : cases) {
    auto request = ReadResponsesRequest(c.body);
    ASSERT_FALSE(request.ok()) << c.body;
    EXPECT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument) << c.body;
    EXPECT_EQ(ParamOf(request.status()), c.param) << c.body << "\n" << request.status();
  }
  std::string metadata = R"({"input": "x", "metadata": {)";
  for (int i = 0; i < 17; ++i) metadata += absl::StrCat(i ? "," : "", "\"k", i, "\": \"v\"");
  EXPECT_EQ(ParamOf(ReadResponsesRequest(metadata + "}}").status()), "metadata");
}

}  // namespace
}  // namespace kvd::server::responses
