// A request's structured-output fields read from HTTP JSON (response_format, structured_outputs,
// guided_*) and from gRPC's StructuredOutput, then compiled for the scheduler: each form, the
// schema's key order, and every refusal named by its param.
#include "server/openai/structured_output_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "server/grpc/generate_request.h"
#include "server/http/error_response.h"
#include "server/openai/completion_request_json.h"
#include "tests/unit/server/tiny_model_test.h"

namespace kvd::server {
namespace {

using json = nlohmann::json;
using Kind = structured::ConstraintSpec::Kind;
using ::testing::HasSubstr;

absl::StatusOr<CompletionRequest> Read(const std::string& body) {
  return ReadCompletionRequestJson(structured::JsonValue::parse(body), ApiKind::kCompletion);
}

std::string ParamOf(const absl::Status& status) {
  return json::parse(ErrorJson(status))["error"]["param"].get<std::string>();
}

TEST(StructuredOutputJsonTest, ReadsEachFormKeepingTheSchemasKeyOrder) {
  auto schema = Read(R"({"prompt": "x", "response_format": {"type": "json_schema",
      "json_schema": {"name": "n", "strict": true, "schema": {"properties": {"z": {}, "a": {}}}}}})");
  ASSERT_TRUE(schema.ok()) << schema.status();
  EXPECT_EQ(schema->structured_output->kind, Kind::kJsonSchema);
  EXPECT_EQ(schema->structured_output->text, R"({"properties":{"z":{},"a":{}}})");
  EXPECT_EQ(schema->structured_output_param, "response_format.json_schema.schema");

  auto object = Read(R"({"prompt": "x", "response_format": {"type": "json_object"}})");
  EXPECT_EQ(object->structured_output->kind, Kind::kJsonObject);
  auto text = Read(R"({"prompt": "x", "response_format": {"type": "text"}})");
  EXPECT_FALSE(text->structured_output.has_value());

  auto regex = Read(R"({"prompt": "x", "structured_outputs": {"regex": "a+"}})");
  EXPECT_EQ(regex->structured_output, (structured::ConstraintSpec{Kind::kRegex, "a+"}));
  auto choice = Read(R"({"prompt": "x", "guided_choice": ["yes", "no"]})");
  EXPECT_EQ(choice->structured_output, (structured::ConstraintSpec{Kind::kChoice, R"(["yes","no"])"}));
  auto guided_json = Read(R"({"prompt": "x", "guided_json": "{\"type\": \"integer\"}"})");
  EXPECT_EQ(guided_json->structured_output->text, R"({"type": "integer"})");
}

TEST(StructuredOutputJsonTest, JsonIsCompactUnlessDisableAnyWhitespaceIsFalse) {
  using structured::JsonWhitespace;
  auto plain = Read(R"({"prompt": "x", "response_format": {"type": "json_object"}})");
  EXPECT_EQ(plain->json_whitespace, JsonWhitespace::kCompact);
  auto beside = Read(R"({"prompt": "x", "structured_outputs": {"json": {"type": "integer"},
      "disable_any_whitespace": false}})");
  ASSERT_TRUE(beside.ok()) << beside.status();
  EXPECT_EQ(beside->json_whitespace, JsonWhitespace::kAny);
  EXPECT_EQ(beside->structured_output->kind, Kind::kJsonSchema);
  EXPECT_EQ(beside->structured_output_param, "structured_outputs.json");
  // Alone, beside another constraint field (or none: it then spaces forced tool calls).
  auto alone = Read(R"({"prompt": "x", "response_format": {"type": "json_object"},
      "structured_outputs": {"disable_any_whitespace": false}})");
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_EQ(alone->json_whitespace, JsonWhitespace::kAny);
  EXPECT_EQ(alone->structured_output->kind, Kind::kJsonObject);
  auto compact = Read(R"({"prompt": "x", "structured_outputs": {"disable_any_whitespace": true}})");
  ASSERT_TRUE(compact.ok()) << compact.status();
  EXPECT_EQ(compact->json_whitespace, JsonWhitespace::kCompact);
  EXPECT_FALSE(compact->structured_output.has_value());
}

TEST(StructuredOutputJsonTest, RefusesBadShapesNamingTheParam) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"response_format": {"type": "xml"}})", "response_format"},
      {R"({"response_format": {"type": "json_schema"}})", "response_format.json_schema"},
      {R"({"response_format": {"type": "json_schema", "json_schema": {"schema": {}}}})",
       "response_format.json_schema.name"},
      {R"({"response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": 3}}})",
       "response_format.json_schema.schema"},
      {R"({"structured_outputs": {"grammar": "root ::= x"}})", "structured_outputs.grammar"},
      {R"({"structured_outputs": {"regex": "a", "choice": ["b"]}})", "structured_outputs"},
      {R"({"guided_choice": []})", "guided_choice"},
      {R"({"guided_grammar": "x"})", "guided_grammar"},
      {R"({"guided_regex": "a", "response_format": {"type": "json_object"}})", "guided_regex"},
      {R"({"structured_outputs": {"disable_any_whitespace": 0}})",
       "structured_outputs.disable_any_whitespace"},
      {R"({"structured_outputs": {"regex": "a", "disable_any_whitespace": "no"}})",
       "structured_outputs.disable_any_whitespace"},
      {R"({"structured_outputs": {"disable_any_whitespace": false, "regex": "a", "choice": ["b"]}})",
       "structured_outputs"},
  };
  for (const auto& [fields, param] : cases) {
    json body = json::parse(fields);
    body["prompt"] = "x";
    const auto request = ReadCompletionRequestJson(body, ApiKind::kCompletion);
    ASSERT_FALSE(request.ok()) << fields;
    EXPECT_EQ(ParamOf(request.status()), param) << fields << ": " << request.status();
  }
}

TEST(StructuredOutputJsonTest, ReadsGrpcsStructuredOutput) {
  v1::GenerateRequest request;
  request.set_prompt("x");
  request.mutable_structured_output()->set_json_schema(R"({"type": "string"})");
  auto read = ReadGenerateRequest(request);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->structured_output, (structured::ConstraintSpec{Kind::kJsonSchema,
                                                                 R"({"type": "string"})"}));
  EXPECT_EQ(read->structured_output_param, "structured_output.json_schema");
  EXPECT_EQ(read->json_whitespace, structured::JsonWhitespace::kCompact);
  request.mutable_structured_output()->set_any_whitespace(true);
  EXPECT_EQ(ReadGenerateRequest(request)->json_whitespace, structured::JsonWhitespace::kAny);
  request.mutable_structured_output()->mutable_choice()->add_choices("");
  EXPECT_EQ(ParamOf(ReadGenerateRequest(request).status()), "structured_output.choice");
}

class StructuredOutputParamsTest : public TinyModelTest {};

TEST_F(StructuredOutputParamsTest, CompilesOnceThroughTheCacheAndRefusesWhatItCannotHonour) {
  structured::ConstraintCache cache(
      structured::TokenTrie::Create(*tokenizer_, config_->eos_token_ids).value());
  const auto resolve = [&](const std::string& body) {
    auto request = Read(body);
    EXPECT_TRUE(request.ok()) << request.status();
    request->model = "kvd-tiny";
    return ResolveCompletionParams(*request, Model(), nullptr, nullptr, &cache);
  };
  const std::string regex = R"({"prompt": "x", "structured_outputs": {"regex": "[0-9]+"}})";
  auto first = resolve(regex);
  auto second = resolve(regex);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->request.constraint, second->request.constraint);
  EXPECT_EQ(cache.statistics().compiled, 1u);

  // The same schema spaced two ways is two constraints; a regex ignores the option.
  const std::string schema = R"({"prompt": "x", "guided_json": {"type": "array"}})";
  const std::string any_schema = R"({"prompt": "x", "guided_json": {"type": "array"},
      "structured_outputs": {"disable_any_whitespace": false}})";
  ASSERT_TRUE(resolve(schema).ok() && resolve(any_schema).ok() && resolve(schema).ok());
  EXPECT_EQ(cache.statistics().compiled, 3u);
  ASSERT_TRUE(resolve(R"({"prompt": "x", "structured_outputs": {"regex": "[0-9]+",
      "disable_any_whitespace": false}})")
                  .ok());
  EXPECT_EQ(cache.statistics().compiled, 3u);

  auto eos = resolve(R"({"prompt": "x", "ignore_eos": true, "guided_regex": "a"})");
  EXPECT_EQ(ParamOf(eos.status()), "ignore_eos");
  auto min_tokens = resolve(R"({"prompt": "x", "min_tokens": 2, "guided_regex": "a"})");
  EXPECT_EQ(ParamOf(min_tokens.status()), "min_tokens");
  auto bad_regex = resolve(R"j({"prompt": "x", "guided_regex": "(?=a)"})j");
  EXPECT_EQ(ParamOf(bad_regex.status()), "guided_regex");
  EXPECT_THAT(bad_regex.status().message(), HasSubstr("lookaround"));

  // Without a cache (no tokenizer to mask with) structured outputs are refused.
  auto request = Read(regex);
  request->model = "kvd-tiny";
  EXPECT_EQ(ParamOf(ResolveCompletionParams(*request, Model()).status()), "structured_outputs.regex");
}

}  // namespace
}  // namespace kvd::server
