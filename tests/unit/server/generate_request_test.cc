// A gRPC GenerateRequest read into the CompletionRequest an HTTP body also becomes: every field
// maps, unset fields stay unset, and both protocols resolve to the same scheduler request.
#include "server/grpc/generate_request.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "server/core/completion_params.h"
#include "server/core/keepkv_request.h"
#include "server/grpc/sampling_proto.h"
#include "server/http/error_response.h"
#include "tests/unit/server/tiny_model_test.h"

namespace kvd::server {
namespace {

using json = nlohmann::json;

// Sampling and length fields the tests map and compare: temperature 0.5, top_k 5, seed 7,
// token 42 biased by -100, max_tokens 12, n 2, stop "\n".
void SetSamplingAndLimits(v1::GenerateRequest& request) {
  v1::SamplingParams* sampling = request.mutable_sampling();
  sampling->set_temperature(0.5f);
  sampling->set_top_k(5);
  sampling->set_seed(7);
  (*sampling->mutable_logit_bias())[42] = -100.0f;
  request.set_max_tokens(12);
  request.set_n(2);
  request.add_stop("\n");
}

TEST(ReadGenerateRequestTest, ChatRequestMapsEveryField) {
  v1::GenerateRequest request;
  request.set_model("kvd-tiny");
  auto* message = request.mutable_messages()->add_messages();
  message->set_role("user");
  message->set_content("Q:vig");
  message->set_name("ana");
  SetSamplingAndLimits(request);
  request.add_stop_token_ids(873);
  request.set_logprobs(3);
  request.add_documents("doc-x");
  request.set_priority(-1);
  request.set_add_generation_prompt(false);
  request.set_chat_template_kwargs_json(R"({"enable_thinking": false})");
  auto read = ReadGenerateRequest(request);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->kind, ApiKind::kChat);
  EXPECT_EQ(read->model, "kvd-tiny");
  EXPECT_EQ(read->messages,
            json::parse(R"([{"role": "user", "content": "Q:vig", "name": "ana"}])"));
  EXPECT_EQ(SentSampling(*read, "temperature"), 0.5);
  EXPECT_EQ(SentSampling(*read, "top_k"), 5);
  EXPECT_EQ(read->sampling.size(), 2u);
  EXPECT_EQ(read->seed, 7);
  EXPECT_EQ(read->logit_bias, (std::vector<std::pair<std::string, double>>{{"42", -100.0}}));
  EXPECT_EQ(read->max_tokens, 12);
  EXPECT_EQ(read->n, 2);
  EXPECT_EQ(read->stop, std::vector<std::string>{"\n"});
  EXPECT_EQ(read->stop_token_ids, std::vector<int64_t>{873});
  EXPECT_TRUE(read->chat_logprobs);
  EXPECT_EQ(read->top_logprobs, 3);
  EXPECT_EQ(read->documents, std::vector<std::string>{"doc-x"});
  EXPECT_EQ(read->priority, -1);
  EXPECT_EQ(read->add_generation_prompt, false);
  EXPECT_EQ(read->chat_template_kwargs, json::parse(R"({"enable_thinking": false})"));
  EXPECT_TRUE(read->stream);
  EXPECT_FALSE(read->keepkv.has_value());
}

TEST(ReadGenerateRequestTest, CompletionInputsAndUnsetFields) {
  v1::GenerateRequest request;
  request.set_model("m");
  request.set_prompt("the old river");
  request.set_logprobs(2);
  auto read = ReadGenerateRequest(request);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->kind, ApiKind::kCompletion);
  ASSERT_EQ(read->prompts.size(), 1u);
  EXPECT_EQ(std::get<std::string>(read->prompts[0]), "the old river");
  EXPECT_EQ(read->logprobs, 2);
  EXPECT_TRUE(read->sampling.empty());
  EXPECT_FALSE(read->seed ||
               read->max_tokens || read->min_tokens || read->n || read->priority ||
               read->skip_special_tokens || read->add_generation_prompt);
  request.mutable_prompt_token_ids()->add_ids(1);
  request.mutable_prompt_token_ids()->add_ids(2);
  read = ReadGenerateRequest(request);
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->prompts.size(), 1u);
  EXPECT_EQ(std::get<std::vector<int64_t>>(read->prompts[0]), (std::vector<int64_t>{1, 2}));
}

TEST(ReadGenerateRequestTest, RefusesWhatTheTypesCannotRuleOut) {
  v1::GenerateRequest request;
  request.set_model("m");
  EXPECT_EQ(ReadGenerateRequest(request).status().code(), absl::StatusCode::kInvalidArgument);
  request.set_prompt("x");
  request.set_chat_template_kwargs_json("[1]");
  EXPECT_EQ(ReadGenerateRequest(request).status().code(), absl::StatusCode::kInvalidArgument);
}

// The budget's oneof says which it is: budget_tokens 1 is one token, never the fraction 1.0
// that the JSON number 1 means.
TEST(ReadGenerateRequestTest, KeepKvBudgetOfOneTokenIsOneToken) {
  v1::KeepKv keepkv;
  keepkv.set_budget_tokens(1);
  auto params = ResolveKeepKv(ReadKeepKv(keepkv), KeepKvConfig{});
  ASSERT_TRUE(params.ok()) << params.status();
  ASSERT_TRUE(params->has_value());
  EXPECT_EQ((*params)->budget.tokens, 1);
  EXPECT_EQ((*params)->Budget(256), 1);

  keepkv.set_budget_fraction(1.0);
  params = ResolveKeepKv(ReadKeepKv(keepkv), KeepKvConfig{});
  ASSERT_TRUE(params.ok() && params->has_value());
  EXPECT_EQ((*params)->budget.tokens, 0);
  EXPECT_EQ((*params)->Budget(256), 256);
}

TEST(ReadGenerateRequestTest, KeepKvFieldsOverTheTenantsDefaults) {
  v1::KeepKv keepkv;
  keepkv.set_budget_tokens(256);
  keepkv.set_alpha(0.5);
  keepkv.set_window(4);
  keepkv.set_refresh_every(0);
  keepkv.set_recent(8);
  keepkv.set_method("evict");
  auto params = ResolveKeepKv(ReadKeepKv(keepkv), KeepKvConfig{});
  ASSERT_TRUE(params.ok() && params->has_value()) << params.status();
  EXPECT_EQ((*params)->budget.tokens, 256);
  EXPECT_EQ((*params)->alpha, 0.5);
  EXPECT_EQ((*params)->window, 4);
  EXPECT_EQ((*params)->recent, 8);
  EXPECT_EQ((*params)->method, cache_store::MergeMethod::kEvict);

  // An empty message turns KeepKV on with the defaults; disabled turns it off.
  params = ResolveKeepKv(ReadKeepKv(v1::KeepKv()), KeepKvConfig{});
  ASSERT_TRUE(params.ok() && params->has_value());
  v1::KeepKv off;
  off.set_disabled(true);
  params = ResolveKeepKv(ReadKeepKv(off), KeepKvConfig{.enabled = true});
  ASSERT_TRUE(params.ok());
  EXPECT_FALSE(params->has_value());

  // Disabled with something to set is a contradiction.
  off.set_alpha(0.5);
  const absl::Status status = ResolveKeepKv(ReadKeepKv(off), KeepKvConfig{}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      ErrorFields(status),
      (std::vector<std::pair<std::string, std::string>>{{"kvd-error-param", "keepkv.disabled"}}));
}

// The proto's KeepKv has a field for each row of the table a request may set, of the row's
// type and with presence (the budget a oneof of a token count and a fraction), and no other
// but `disabled`: the reader finds each by its row's name.
TEST(ReadGenerateRequestTest, KeepKvMessageHoldsTheTablesRequestRows) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Descriptor& message = *v1::KeepKv::descriptor();
  std::set<std::string> expected = {"disabled"};
  for (const cache_store::KeepKvField& field : cache_store::kKeepKvFields) {
    if (!cache_store::MaySet(cache_store::KeepKvScope::kRequest, field)) continue;
    SCOPED_TRACE(std::string(field.name));
    switch (cache_store::ValueTypeOf(field)) {
      case cache_store::KeepKvValueType::kBudget: {
        const auto* oneof = message.FindOneofByName(std::string(field.name));
        ASSERT_NE(oneof, nullptr);
        ASSERT_EQ(oneof->field_count(), 2);
        EXPECT_EQ(oneof->field(0)->cpp_type(), FieldDescriptor::CPPTYPE_INT32);
        EXPECT_EQ(oneof->field(1)->cpp_type(), FieldDescriptor::CPPTYPE_DOUBLE);
        expected.insert({oneof->field(0)->name(), oneof->field(1)->name()});
        continue;
      }
      case cache_store::KeepKvValueType::kNumber:
      case cache_store::KeepKvValueType::kInteger:
      case cache_store::KeepKvValueType::kName:
        break;
    }
    const FieldDescriptor* proto_field = message.FindFieldByName(std::string(field.name));
    ASSERT_NE(proto_field, nullptr);
    EXPECT_TRUE(proto_field->has_presence());
    const auto type = cache_store::ValueTypeOf(field);
    EXPECT_EQ(proto_field->cpp_type(),
              type == cache_store::KeepKvValueType::kNumber    ? FieldDescriptor::CPPTYPE_DOUBLE
              : type == cache_store::KeepKvValueType::kInteger ? FieldDescriptor::CPPTYPE_INT32
                                                               : FieldDescriptor::CPPTYPE_STRING);
    expected.insert(proto_field->name());
  }
  std::set<std::string> actual;
  for (int i = 0; i < message.field_count(); ++i) actual.insert(message.field(i)->name());
  EXPECT_EQ(actual, expected);
}

// The proto's SamplingParams has an optional field of the row's name for each row of
// engine::kSamplingFields, of a type that holds the row's values, and the reader and the writer
// carry each row's value through it.
TEST(ReadGenerateRequestTest, SamplingMessageHoldsEveryRowOfTheTable) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Descriptor& message = *v1::SamplingParams::descriptor();
  v1::SamplingParams sampling;
  for (const engine::SamplingField& field : engine::kSamplingFields) {
    SCOPED_TRACE(std::string(field.name));
    const FieldDescriptor* proto_field = message.FindFieldByName(std::string(field.name));
    ASSERT_NE(proto_field, nullptr);
    EXPECT_TRUE(proto_field->has_presence());
    EXPECT_EQ(proto_field->cpp_type(), engine::IsInteger(field) ? FieldDescriptor::CPPTYPE_INT32
                                                                : FieldDescriptor::CPPTYPE_FLOAT);
    WriteSamplingProto(field, field.range.max, sampling);
  }
  const auto read = ReadSamplingProto(sampling);
  ASSERT_EQ(read.size(), std::size(engine::kSamplingFields));
  for (size_t i = 0; i < read.size(); ++i) {
    EXPECT_EQ(read[i].first, &engine::kSamplingFields[i]);
    EXPECT_FLOAT_EQ(static_cast<float>(read[i].second),
                    static_cast<float>(engine::kSamplingFields[i].range.max));
  }
}

class BothProtocolsTest : public TinyModelTest {};

void ExpectSameRequest(const CompletionParams& http, const CompletionParams& grpc) {
  EXPECT_EQ(http.kind, grpc.kind);
  EXPECT_EQ(http.prompts, grpc.prompts);
  const scheduler::Request& a = http.request;
  const scheduler::Request& b = grpc.request;
  EXPECT_EQ(a.n, b.n);
  EXPECT_EQ(a.max_tokens, b.max_tokens);
  EXPECT_EQ(a.min_tokens, b.min_tokens);
  EXPECT_EQ(a.stop, b.stop);
  EXPECT_EQ(a.stop_token_ids, b.stop_token_ids);
  EXPECT_EQ(a.priority, b.priority);
  EXPECT_EQ(a.cache_salt, b.cache_salt);
  EXPECT_EQ(a.num_speculative_tokens, b.num_speculative_tokens);
  EXPECT_EQ(a.skip_special_tokens, b.skip_special_tokens);
  EXPECT_EQ(a.sampling.temperature, b.sampling.temperature);
  EXPECT_EQ(a.sampling.top_p, b.sampling.top_p);
  EXPECT_EQ(a.sampling.top_k, b.sampling.top_k);
  EXPECT_EQ(a.sampling.seed, b.sampling.seed);
  EXPECT_EQ(a.sampling.logit_bias, b.sampling.logit_bias);
  EXPECT_EQ(a.sampling.logprobs, b.sampling.logprobs);
  EXPECT_EQ(a.sampling.top_logprobs, b.sampling.top_logprobs);
  ASSERT_EQ(a.keepkv.has_value(), b.keepkv.has_value());
  if (a.keepkv) {
    EXPECT_EQ(a.keepkv->budget, b.keepkv->budget);
    EXPECT_EQ(a.keepkv->window, b.keepkv->window);
    EXPECT_EQ(a.keepkv->method, b.keepkv->method);
    EXPECT_EQ(a.keepkv->protected_prefix, b.keepkv->protected_prefix);
    EXPECT_TRUE(*a.keepkv == *b.keepkv);
  }
}

TEST_F(BothProtocolsTest, TheSameRequestResolvesTheSameWay) {
  const json http_body = json::parse(R"({
    "model": "kvd-tiny", "stream": true,
    "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Q:vig"}],
    "temperature": 0.5, "top_k": 5, "seed": 7, "logit_bias": {"42": -100},
    "max_tokens": 12, "n": 2, "stop": ["\n"], "stop_token_ids": [7],
    "logprobs": true, "top_logprobs": 3, "priority": -1, "cache_salt": "user-42",
    "num_speculative_tokens": 2, "keepkv": {"budget": 32, "window": 4, "method": "evict"}})");
  v1::GenerateRequest request;
  request.set_model("kvd-tiny");
  auto* system = request.mutable_messages()->add_messages();
  system->set_role("system");
  system->set_content("Be brief.");
  auto* user = request.mutable_messages()->add_messages();
  user->set_role("user");
  user->set_content("Q:vig");
  SetSamplingAndLimits(request);
  request.add_stop_token_ids(7);
  request.set_logprobs(3);
  request.set_priority(-1);
  request.set_cache_salt("user-42");
  request.set_num_speculative_tokens(2);
  request.mutable_keepkv()->set_budget_tokens(32);
  request.mutable_keepkv()->set_window(4);
  request.mutable_keepkv()->set_method("evict");

  auto http = ParseCompletionParams(http_body, ApiKind::kChat, Model());
  ASSERT_TRUE(http.ok()) << http.status();
  auto read = ReadGenerateRequest(request);
  ASSERT_TRUE(read.ok()) << read.status();
  auto grpc = ResolveCompletionParams(*read, Model());
  ASSERT_TRUE(grpc.ok()) << grpc.status();
  ExpectSameRequest(*http, *grpc);
  EXPECT_GT(grpc->request.keepkv->protected_prefix, 0);
  EXPECT_EQ(grpc->request.num_speculative_tokens, 2);

  // And the same value refused the same way, with the same param.
  request.mutable_sampling()->set_temperature(3.0f);
  read = ReadGenerateRequest(request);
  ASSERT_TRUE(read.ok());
  json bad_body = http_body;
  bad_body["temperature"] = 3.0;
  const absl::Status grpc_error = ResolveCompletionParams(*read, Model()).status();
  const absl::Status http_error = ParseCompletionParams(bad_body, ApiKind::kChat, Model()).status();
  EXPECT_EQ(grpc_error.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(grpc_error, http_error);
}

}  // namespace
}  // namespace kvd::server
