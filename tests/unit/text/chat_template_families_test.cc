// Model-family chat templates and loading from tokenizer_config.json, with expected prompts
// worked out by hand from each template.
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/source_dir.h"
#include "tests/unit/text/chat_template_family_templates.h"
#include "text/chat_template.h"

namespace kvd::text {
namespace {

using Json = nlohmann::ordered_json;
using family_templates::kLlama31Template;
using family_templates::kMistralTemplate;
using family_templates::kQwen25Template;
using family_templates::kQwen3Template;

std::string Render(std::string_view source, const Json& messages, bool add_generation_prompt,
                   const Json& extra = Json::object(), std::string bos = "<s>",
                   std::string eos = "</s>") {
  absl::StatusOr<std::unique_ptr<ChatTemplate>> tmpl = ChatTemplate::Parse(source, bos, eos);
  EXPECT_TRUE(tmpl.ok()) << tmpl.status();
  if (!tmpl.ok()) return "<parse error>";
  absl::StatusOr<std::string> out = (*tmpl)->Render(messages, add_generation_prompt, extra);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.value_or("<render error>");
}

absl::Status RenderError(std::string_view source, const Json& messages) {
  absl::StatusOr<std::unique_ptr<ChatTemplate>> tmpl = ChatTemplate::Parse(source, "<s>", "</s>");
  EXPECT_TRUE(tmpl.ok()) << tmpl.status();
  if (!tmpl.ok()) return tmpl.status();
  return (*tmpl)->Render(messages, false).status();
}

Json Message(std::string role, std::string content) {
  return Json{{"role", std::move(role)}, {"content", std::move(content)}};
}

const Json& WeatherTools() {
  static const Json* const kTools = new Json(Json::parse(R"([{"type": "function", "function": {
      "name": "get_weather", "description": "Get the weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])"));
  return *kTools;
}

// A user question answered with one tool call and its result.
Json ToolConversation() {
  return Json::parse(R"([
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "abcdefghi", "type": "function",
      "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "tool_call_id": "abcdefghi", "content": "{\"temp\": 20}"}])");
}

TEST(ChatTemplateBundledModel, RendersLlama3Prompt) {
  absl::StatusOr<std::unique_ptr<ChatTemplate>> tmpl = ChatTemplate::FromTokenizerConfig(
      std::filesystem::path(kvd::test_support::SourceDir()) / "models/kvd-tiny");
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  const Json messages = {Message("system", "You are terse."), Message("user", "Hello")};
  absl::StatusOr<std::string> out = (*tmpl)->Render(messages, true);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out,
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are terse."
            "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

class TokenizerConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& text) { std::ofstream(dir_ / "tokenizer_config.json") << text; }
  std::filesystem::path dir_;
};

TEST_F(TokenizerConfigTest, NamedTemplatesAndTokenObjects) {
  Write(R"({"bos_token": {"content": "<B>", "special": true}, "eos_token": "<E>",
            "chat_template": [{"name": "tool_use", "template": "tools"},
                              {"name": "default", "template": "{{ bos_token }}x{{ eos_token }}"}]})");
  absl::StatusOr<std::unique_ptr<ChatTemplate>> tmpl = ChatTemplate::FromTokenizerConfig(dir_);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  absl::StatusOr<std::string> out = (*tmpl)->Render(Json::array(), false);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "<B>x<E>");
}

TEST_F(TokenizerConfigTest, LoadErrors) {
  EXPECT_EQ(ChatTemplate::FromTokenizerConfig(dir_).status().code(), absl::StatusCode::kNotFound);
  Write(R"({"bos_token": "<s>"})");
  EXPECT_EQ(ChatTemplate::FromTokenizerConfig(dir_).status().code(), absl::StatusCode::kNotFound);
  Write(R"({"chat_template": "{% for %}"})");
  absl::Status status = ChatTemplate::FromTokenizerConfig(dir_).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), ::testing::HasSubstr("1:8: expected a variable name"));
  Write("{not json");
  EXPECT_EQ(ChatTemplate::FromTokenizerConfig(dir_).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ChatTemplateLlama31, SystemPromptWithDate) {
  const Json messages = {Message("system", "You are helpful. "), Message("user", "Hi there")};
  EXPECT_EQ(Render(kLlama31Template, messages, true, Json{{"date_string", "26 Jul 2024"}}),
            "<s><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December "
            "2023\nToday Date: 26 Jul 2024\n\nYou are helpful.<|eot_id|><|start_header_id|>user"
            "<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>assistant"
            "<|end_header_id|>\n\n");
}

TEST(ChatTemplateLlama31, ToolsInFirstUserMessage) {
  EXPECT_EQ(
      Render(kLlama31Template, ToolConversation(), true,
             Json{{"date_string", "26 Jul 2024"}, {"tools", WeatherTools()}}),
      "<s><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\nCutting Knowledge "
      "Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user"
      "<|end_header_id|>\n\nGiven the following functions, please respond with a JSON for a "
      "function call with its proper arguments that best answers the given prompt.\n\nRespond "
      "in the format {\"name\": function name, \"parameters\": dictionary of argument name and "
      "its value}.Do not use variables.\n\n{\n    \"type\": \"function\",\n    \"function\": "
      "{\n        \"name\": \"get_weather\",\n        \"description\": \"Get the weather\",\n"
      "        \"parameters\": {\n            \"type\": \"object\",\n            "
      "\"properties\": {\n                \"city\": {\n                    \"type\": "
      "\"string\"\n                }\n            },\n            \"required\": [\n"
      "                \"city\"\n            ]\n        }\n    }\n}\n\nWeather in Paris?"
      "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\", "
      "\"parameters\": {\"city\": \"Paris\"}}<|eot_id|><|start_header_id|>ipython"
      "<|end_header_id|>\n\n\"{\\\"temp\\\": 20}\"<|eot_id|><|start_header_id|>assistant"
      "<|end_header_id|>\n\n");
}

TEST(ChatTemplateLlama31, DefaultDateComesFromStrftimeNow) {
  const std::string out = Render(kLlama31Template, Json::array({Message("user", "x")}), false);
  EXPECT_THAT(out, ::testing::MatchesRegex(
                       ".*Today Date: [0-9][0-9] [A-Z][a-z][a-z] [0-9][0-9][0-9][0-9]\n\n.*"));
}

TEST(ChatTemplateQwen25, DefaultSystemPrompt) {
  EXPECT_EQ(Render(kQwen25Template, Json::array({Message("user", "Hi")}), true),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
            "assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateQwen25, ToolsAndToolCalls) {
  EXPECT_EQ(
      Render(kQwen25Template, ToolConversation(), true, Json{{"tools", WeatherTools()}}),
      "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant."
      "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou "
      "are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
      "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": "
      "\"Get the weather\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": "
      "{\"type\": \"string\"}}, \"required\": [\"city\"]}}}\n</tools>\n\nFor each function "
      "call, return a json object with function name and arguments within <tool_call>"
      "</tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
      "<args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\nWeather in Paris?"
      "<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", "
      "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n<|im_start|>user\n"
      "<tool_response>\n{\"temp\": 20}\n</tool_response><|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateQwen3, ReasoningKeptOnlyAfterLastQuery) {
  const Json messages = {
      Message("user", "2+2?"), Message("assistant", "<think>\nadd them\n</think>\n\n4"),
      Message("user", "3+3?"), Message("assistant", "<think>\nagain\n</think>\n\n6")};
  EXPECT_EQ(Render(kQwen3Template, messages, false),
            "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n"
            "<|im_start|>user\n3+3?<|im_end|>\n<|im_start|>assistant\n<think>\nagain\n</think>"
            "\n\n6<|im_end|>\n");
}

TEST(ChatTemplateQwen3, ReasoningContentFieldAndDisabledThinking) {
  Json last = Message("assistant", "\nanswer");
  last["reasoning_content"] = "\nsteps\n";
  EXPECT_EQ(Render(kQwen3Template, Json{Message("user", "q"), last}, false),
            "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\nsteps\n</think>\n\n"
            "answer<|im_end|>\n");
  EXPECT_EQ(Render(kQwen3Template, Json::array({Message("user", "hi")}), true,
                   Json{{"enable_thinking", false}}),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  EXPECT_EQ(Render(kQwen3Template, Json::array({Message("user", "hi")}), true,
                   Json{{"enable_thinking", true}}),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateMistral, AlternatingConversationWithSystemPrompt) {
  const Json messages = {Message("system", "You are helpful. "), Message("user", "Hi there"),
                         Message("assistant", "Hello! "), Message("user", "Bye")};
  EXPECT_EQ(Render(kMistralTemplate, messages, false),
            "<s>[INST] Hi there[/INST] Hello!</s>[INST] You are helpful. \n\nBye[/INST]");
}

TEST(ChatTemplateMistral, ToolsCallsAndResults) {
  Json messages = ToolConversation();
  messages.push_back(Message("assistant", "It is 20C. "));
  EXPECT_EQ(Render(kMistralTemplate, messages, false, Json{{"tools", WeatherTools()}}),
            "<s>[AVAILABLE_TOOLS] [{\"type\": \"function\", \"function\": {\"name\": "
            "\"get_weather\", \"description\": \"Get the weather\", \"parameters\": {\"type\": "
            "\"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": "
            "[\"city\"]}}}][/AVAILABLE_TOOLS][INST] Weather in Paris?[/INST][TOOL_CALLS] "
            "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": "
            "\"abcdefghi\"}]</s>[TOOL_RESULTS] {\"content\": {\"temp\": 20}, \"call_id\": "
            "\"abcdefghi\"}[/TOOL_RESULTS] It is 20C.</s>");
}

TEST(ChatTemplateMistral, RejectsNonAlternatingRoles) {
  const absl::Status status =
      RenderError(kMistralTemplate, Json{Message("user", "a"), Message("user", "b")});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "After the optional system message, conversation roles must alternate "
            "user/assistant/user/assistant/...");
}

}  // namespace
}  // namespace kvd::text
