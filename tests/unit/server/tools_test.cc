// Function calling in a chat request: `tools`, `tool_choice` and `parallel_tool_calls` read and
// refused as OpenAI shapes them, tool fields of messages, rendering through a template that
// takes tools, the constraint of a forced call, and the tool parser chosen at start-up.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "server/core/completion_params.h"
#include "server/core/tool_parser.h"
#include "server/http/error_response.h"
#include "server/openai/completion_request_json.h"
#include "structured/constraint_cache.h"
#include "tests/support/source_dir.h"
#include "tests/unit/server/tiny_model_test.h"
#include "tests/unit/text/chat_template_family_templates.h"

namespace kvd::server {
namespace {

using json = nlohmann::json;
using structured::ToolCallSyntax;
using ::testing::HasSubstr;

std::unique_ptr<text::ChatTemplate> TemplateFile(const std::string& name) {
  std::ifstream in(kvd::test_support::SourceDir() + "/tests/data/chat_templates/" + name);
  std::stringstream source;
  source << in.rdbuf();
  return text::ChatTemplate::Parse(source.str(), "<|begin_of_text|>", "<|eot_id|>").value();
}

const char* kWeatherTools = R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                   "unit": {"enum": ["c", "f"]}}, "required": ["city"]}}},
  {"type": "function", "function": {"name": "now"}}])";

class ToolsTest : public TinyModelTest {
 protected:
  static void SetUpTestSuite() {
    TinyModelTest::SetUpTestSuite();
    hermes_ = TemplateFile("hermes_tools.jinja").release();
    llama3_ = TemplateFile("llama3_json_tools.jinja").release();
  }
  static void TearDownTestSuite() {
    delete hermes_;
    delete llama3_;
    TinyModelTest::TearDownTestSuite();
  }

  // A chat request `body` (its raw text: key order counts) on the hermes template.
  absl::StatusOr<CompletionParams> Chat(
      const std::string& body, std::optional<ToolCallSyntax> syntax = ToolCallSyntax::kHermes,
      const text::ChatTemplate* chat_template = nullptr) {
    auto request = ReadCompletionRequestJson(structured::JsonValue::parse(body), ApiKind::kChat);
    if (!request.ok()) return request.status();
    return ResolveCompletionParams(*request, Model(chat_template ? chat_template : hermes_),
                                   nullptr, nullptr, &cache_, syntax);
  }

  static std::string Body(const std::string& rest) {
    return R"({"model": "kvd-tiny", "messages": [{"role": "user", "content": "Weather?"}], )" +
           rest + "}";
  }

  static std::string ParamOf(const absl::Status& status) {
    const json error = json::parse(ErrorJson(status))["error"];
    return error["param"].is_string() ? error["param"].get<std::string>() : "";
  }

  static inline text::ChatTemplate* hermes_ = nullptr;
  static inline text::ChatTemplate* llama3_ = nullptr;
  structured::ConstraintCache cache_{
      structured::TokenTrie::Create(*tokenizer_, config_->eos_token_ids).value()};
};

TEST_F(ToolsTest, ToolsReachTheTemplateInTheClientsKeyOrder) {
  auto params = Chat(Body(absl::StrCat(R"("tools": )", kWeatherTools)));
  ASSERT_TRUE(params.ok()) << params.status();
  const std::string& prompt = params->prompt_texts[0];
  EXPECT_THAT(prompt, HasSubstr(R"({"type": "function", "function": {"name": "get_weather", )"
                                R"("description": "Weather in a city", "parameters": )"
                                R"({"type": "object", "properties": {"city": )"));
  EXPECT_THAT(prompt, HasSubstr("<tool_call>"));
  // auto: parsed for calls, nothing forced.
  EXPECT_EQ(params->tool_syntax, ToolCallSyntax::kHermes);
  EXPECT_FALSE(params->named_tool_choice);
  EXPECT_EQ(params->request.constraint, nullptr);
}

TEST_F(ToolsTest, ToolChoiceNoneShowsToolsWithoutParsingCalls) {
  auto params = Chat(Body(absl::StrCat(R"("tool_choice": "none", "tools": )", kWeatherTools)));
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_THAT(params->prompt_texts[0], HasSubstr("get_weather"));
  EXPECT_EQ(params->tool_syntax, std::nullopt);
}

TEST_F(ToolsTest, RequiredAndNamedChoicesAreConstrained) {
  auto required =
      Chat(Body(absl::StrCat(R"("tool_choice": "required", "tools": )", kWeatherTools)));
  ASSERT_TRUE(required.ok()) << required.status();
  ASSERT_NE(required->request.constraint, nullptr);
  EXPECT_FALSE(required->named_tool_choice);

  auto named = Chat(Body(
      absl::StrCat(R"("tool_choice": {"type": "function", "function": {"name": "now"}}, "tools": )",
                   kWeatherTools)));
  ASSERT_TRUE(named.ok()) << named.status();
  ASSERT_NE(named->request.constraint, nullptr);
  EXPECT_TRUE(named->named_tool_choice);
  EXPECT_NE(named->request.constraint, required->request.constraint);

  // The same request again shares the compiled constraint.
  auto again = Chat(Body(absl::StrCat(R"("tool_choice": "required", "tools": )", kWeatherTools)));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->request.constraint, required->request.constraint);
}

TEST_F(ToolsTest, MessagesCarryCallsAndResults) {
  const std::string body = absl::StrCat(R"({"model": "kvd-tiny", "tools": )", kWeatherTools,
                                        R"(, "messages": [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"unit\": \"c\", \"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "21 C"}]})");
  auto params = Chat(body);
  ASSERT_TRUE(params.ok()) << params.status();
  // The arguments are an object to the template, in the order the client wrote them.
  EXPECT_THAT(params->prompt_texts[0],
              HasSubstr("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                        "{\"unit\": \"c\", \"city\": \"Paris\"}}\n</tool_call><|eot_id|>"));
  EXPECT_THAT(params->prompt_texts[0], HasSubstr("<tool_response>\n21 C\n</tool_response>"));
}

TEST_F(ToolsTest, BadToolFieldsAreNamed) {
  struct Case {
    std::string body;
    std::string param;
  };
  const Case cases[] = {
      {Body(R"("tools": {})"), "tools"},
      {Body(R"("tools": [{"type": "function", "function": {"name": "a b"}}])"), "tools[0]"},
      {Body(R"("tools": [{"type": "code"}])"), "tools[0]"},
      {Body(R"("tools": [{"type": "function", "function": {"name": "f", "x": 1}}])"), "tools[0]"},
      {Body(R"("tools": [{"type": "function", "function": {"name": "f", "parameters": 3}}])"),
       "tools[0]"},
      {Body(R"("tools": [{"type": "function", "function": {"name": "f"}},
                         {"type": "function", "function": {"name": "f"}}])"),
       "tools"},
      {Body(R"("tool_choice": "always")"), "tool_choice"},
      {Body(R"("tool_choice": "required")"), "tool_choice"},
      {Body(absl::StrCat(R"("tool_choice": {"type": "function", "function": {"name": "x"}},
                            "tools": )",
                         kWeatherTools)),
       "tool_choice"},
      {Body(R"("parallel_tool_calls": 1)"), "parallel_tool_calls"},
      {Body(absl::StrCat(R"("tool_choice": "required", "response_format": {"type":
                            "json_object"}, "tools": )",
                         kWeatherTools)),
       "tool_choice"},
      {Body(absl::StrCat(R"("tool_choice": "required", "ignore_eos": true, "tools": )",
                         kWeatherTools)),
       "ignore_eos"},
      {Body(R"("tool_choice": "required", "tools": [{"type": "function", "function": {"name":
             "f", "parameters": {"type": "number", "multipleOf": 2}}}])"),
       "tools"},
      {R"({"model": "kvd-tiny", "messages": [{"role": "assistant", "tool_calls": [{"id": "1",
           "type": "function", "function": {"name": "f", "arguments": "[1]"}}]}]})",
       "messages[0].tool_calls"},
      {R"({"model": "kvd-tiny", "messages": [{"role": "user", "tool_calls": []}]})",
       "messages[0].tool_calls"},
      {R"({"model": "kvd-tiny", "messages": [{"role": "tool", "content": "x",
           "tool_call_id": 7}]})",
       "messages[0].tool_call_id"},
  };
  for (const Case& c : cases) {
    auto params = Chat(c.body);
    ASSERT_FALSE(params.ok()) << c.body;
    EXPECT_EQ(params.status().code(), absl::StatusCode::kInvalidArgument) << c.body;
    EXPECT_EQ(ParamOf(params.status()), c.param) << c.body << "\n" << params.status();
  }
  // The completions endpoint has no tools.
  auto completion = ReadCompletionRequestJson(
      json::parse(R"({"model": "kvd-tiny", "prompt": "x", "tools": []})"), ApiKind::kCompletion);
  ASSERT_FALSE(completion.ok());
  EXPECT_EQ(ParamOf(completion.status()), "tools");
}

TEST_F(ToolsTest, AModelWithoutToolSupportRefusesTools) {
  auto params = Chat(Body(absl::StrCat(R"("tools": )", kWeatherTools)), std::nullopt);
  ASSERT_FALSE(params.ok());
  EXPECT_EQ(ParamOf(params.status()), "tools");
  EXPECT_THAT(params.status().message(), HasSubstr("does not support tools"));
  // Without tools such a model chats as before.
  EXPECT_TRUE(Chat(Body(R"("tool_choice": "none")"), std::nullopt).ok());
}

TEST_F(ToolsTest, TheParserIsDetectedOrSetAtStartUp) {
  EXPECT_EQ(ResolveToolParser("auto", hermes_).value(), ToolCallSyntax::kHermes);
  EXPECT_EQ(ResolveToolParser("auto", llama3_).value(), ToolCallSyntax::kLlama3Json);
  EXPECT_EQ(ResolveToolParser("llama3_json", hermes_).value(), ToolCallSyntax::kLlama3Json);
  EXPECT_EQ(ResolveToolParser("none", hermes_).value(), std::nullopt);
  EXPECT_EQ(ResolveToolParser("auto", chat_template_).value(), std::nullopt);
  EXPECT_EQ(ResolveToolParser("auto", nullptr).value(), std::nullopt);

  const auto set_without_tools = ResolveToolParser("hermes", chat_template_);
  ASSERT_FALSE(set_without_tools.ok());
  EXPECT_THAT(set_without_tools.status().message(), HasSubstr("model.tool_parser"));
  const auto unknown = text::ChatTemplate::Parse(
      "{% for tool in tools %}[[{{ tool.function.name }}]]{% endfor %}", "", "");
  const auto undetected = ResolveToolParser("auto", unknown->get());
  ASSERT_FALSE(undetected.ok());
  EXPECT_THAT(undetected.status().message(), HasSubstr("model.tool_parser"));
}

TEST_F(ToolsTest, TheModelFamiliesTemplatesAreDetected) {
  namespace families = text::family_templates;
  const auto parsed = [](std::string_view source) {
    return text::ChatTemplate::Parse(source, "<s>", "</s>").value();
  };
  EXPECT_EQ(ResolveToolParser("auto", parsed(families::kLlama31Template).get()).value(),
            ToolCallSyntax::kLlama3Json);
  EXPECT_EQ(ResolveToolParser("auto", parsed(families::kQwen25Template).get()).value(),
            ToolCallSyntax::kHermes);
  EXPECT_EQ(ResolveToolParser("auto", parsed(families::kQwen3Template).get()).value(),
            ToolCallSyntax::kHermes);
  // Mistral's [TOOL_CALLS] syntax has no parser: start-up says what to set.
  const auto mistral = ResolveToolParser("auto", parsed(families::kMistralTemplate).get());
  ASSERT_FALSE(mistral.ok());
  EXPECT_THAT(mistral.status().message(), HasSubstr("model.tool_parser"));
  EXPECT_EQ(ResolveToolParser("none", parsed(families::kMistralTemplate).get()).value(),
            std::nullopt);
}

TEST_F(ToolsTest, Llama3TemplateRendersItsOwnSyntax) {
  const std::string body = absl::StrCat(R"({"model": "kvd-tiny", "tools": )", kWeatherTools,
                                        R"(, "tool_choice": "required", "messages": [
    {"role": "user", "content": "Weather?"}]})");
  auto params = Chat(body, ToolCallSyntax::kLlama3Json, llama3_);
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_THAT(params->prompt_texts[0], HasSubstr(R"("parameters": dictionary)"));
  EXPECT_NE(params->request.constraint, nullptr);
}

}  // namespace
}  // namespace kvd::server
