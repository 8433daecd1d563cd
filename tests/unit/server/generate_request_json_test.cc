// A gRPC GenerateRequest becomes the JSON body of the same HTTP request, so one parser checks
// both: every field maps, unset fields stay unset, and what JSON cannot say is refused.
#include "server/grpc/generate_request_json.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "server/http/error_response.h"

namespace kvd::server {
namespace {

using json = nlohmann::json;

TEST(GenerateRequestToJsonTest, ChatRequestMapsEveryField) {
  v1::GenerateRequest request;
  request.set_model("kvd-tiny");
  auto* message = request.mutable_messages()->add_messages();
  message->set_role("user");
  message->set_content("Q:vig");
  message->set_name("ana");
  auto* sampling = request.mutable_sampling();
  sampling->set_temperature(0.5f);
  sampling->set_top_k(5);
  sampling->set_seed(7);
  (*sampling->mutable_logit_bias())[42] = -100.0f;
  request.set_max_tokens(12);
  request.set_n(2);
  request.add_stop("\n");
  request.add_stop_token_ids(873);
  request.set_logprobs(3);
  request.add_documents("doc-x");
  request.set_priority(-1);
  request.set_add_generation_prompt(false);
  request.set_chat_template_kwargs_json(R"({"enable_thinking": false})");
  auto body = GenerateRequestToJson(request);
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(body->kind, ApiKind::kChat);
  EXPECT_EQ(body->body, json::parse(R"({
    "model": "kvd-tiny", "stream": true,
    "messages": [{"role": "user", "content": "Q:vig", "name": "ana"}],
    "temperature": 0.5, "top_k": 5, "seed": 7, "logit_bias": {"42": -100.0},
    "max_tokens": 12, "n": 2, "stop": ["\n"], "stop_token_ids": [873],
    "logprobs": true, "top_logprobs": 3, "documents": ["doc-x"], "priority": -1,
    "add_generation_prompt": false, "chat_template_kwargs": {"enable_thinking": false}})"));
}

TEST(GenerateRequestToJsonTest, CompletionInputsAndUnsetFields) {
  v1::GenerateRequest request;
  request.set_model("m");
  request.set_prompt("the old river");
  request.set_logprobs(2);
  auto body = GenerateRequestToJson(request);
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(body->kind, ApiKind::kCompletion);
  EXPECT_EQ(body->body, json::parse(R"({"model": "m", "prompt": "the old river",
                                        "logprobs": 2, "stream": true})"));
  request.mutable_prompt_token_ids()->add_ids(1);
  request.mutable_prompt_token_ids()->add_ids(2);
  body = GenerateRequestToJson(request);
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(body->body["prompt"], json::parse("[1, 2]"));
}

TEST(GenerateRequestToJsonTest, RefusesWhatJsonCannotSay) {
  v1::GenerateRequest request;
  request.set_model("m");
  EXPECT_EQ(GenerateRequestToJson(request).status().code(), absl::StatusCode::kInvalidArgument);
  request.set_prompt("x");
  request.set_chat_template_kwargs_json("[1]");
  EXPECT_EQ(GenerateRequestToJson(request).status().code(), absl::StatusCode::kInvalidArgument);
}

// KeepKv maps to "keepkv": unset leaves it out (the tenant's default), fields set become an
// object (a budget as an integer or a fraction), disabled becomes null.
TEST(GenerateRequestToJsonTest, KeepKvMapsToTheSameJson) {
  v1::GenerateRequest request;
  request.set_model("m");
  request.set_prompt("x");
  auto body = GenerateRequestToJson(request);
  ASSERT_TRUE(body.ok());
  EXPECT_FALSE(body->body.contains("keepkv"));

  request.mutable_keepkv();
  body = GenerateRequestToJson(request);
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(body->body["keepkv"], json::object());

  v1::KeepKv* keepkv = request.mutable_keepkv();
  keepkv->set_budget_tokens(256);
  keepkv->set_alpha(0.5);
  keepkv->set_window(4);
  keepkv->set_refresh_every(0);
  keepkv->set_recent(8);
  keepkv->set_method("evict");
  body = GenerateRequestToJson(request);
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(body->body["keepkv"], json::parse(R"({"budget": 256, "alpha": 0.5, "window": 4,
                                                  "refresh_every": 0, "recent": 8,
                                                  "method": "evict"})"));
  EXPECT_TRUE(body->body["keepkv"]["budget"].is_number_integer());

  keepkv->set_budget_fraction(1.0);  // a fraction stays one, even when whole
  body = GenerateRequestToJson(request);
  ASSERT_TRUE(body.ok());
  EXPECT_TRUE(body->body["keepkv"]["budget"].is_number_float());
  EXPECT_EQ(body->body["keepkv"]["budget"].dump(), "1.0");

  v1::KeepKv off;
  off.set_disabled(true);
  *request.mutable_keepkv() = off;
  body = GenerateRequestToJson(request);
  ASSERT_TRUE(body.ok());
  ASSERT_TRUE(body->body.contains("keepkv"));
  EXPECT_TRUE(body->body["keepkv"].is_null());

  // Disabled with something to set is a contradiction.
  request.mutable_keepkv()->set_alpha(0.5);
  const absl::Status status = GenerateRequestToJson(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      ErrorFields(status),
      (std::vector<std::pair<std::string, std::string>>{{"kvd-error-param", "keepkv.disabled"}}));
}

}  // namespace
}  // namespace kvd::server
