#include "server/grpc/generate_request_json.h"

#include <string>
#include <utility>

#include "engine/bounded_json.h"
#include "server/http/error_response.h"

namespace kvd::server {
namespace {

using json = nlohmann::json;

// A JSON array of a repeated field's values.
template <typename Repeated>
json Array(const Repeated& values) {
  json array = json::array();
  for (const auto& value : values) array.push_back(value);
  return array;
}

// KeepKv as HTTP's "keepkv": null when disabled, else an object of the fields set.
absl::StatusOr<json> KeepKvJson(const v1::KeepKv& keepkv) {
  json out = json::object();
  switch (keepkv.budget_case()) {
    case v1::KeepKv::kBudgetTokens:
      out["budget"] = keepkv.budget_tokens();
      break;
    case v1::KeepKv::kBudgetFraction:
      out["budget"] = keepkv.budget_fraction();
      break;
    case v1::KeepKv::BUDGET_NOT_SET:
      break;
  }
  if (keepkv.has_alpha()) out["alpha"] = keepkv.alpha();
  if (keepkv.has_window()) out["window"] = keepkv.window();
  if (keepkv.has_refresh_every()) out["refresh_every"] = keepkv.refresh_every();
  if (keepkv.has_recent()) out["recent"] = keepkv.recent();
  if (keepkv.has_method()) out["method"] = keepkv.method();
  if (!keepkv.disabled()) return out;
  if (!out.empty()) {
    return WithParam(absl::InvalidArgumentError(
                         "keepkv.disabled turns KeepKV off; it takes no other keepkv field"),
                     "keepkv.disabled");
  }
  return json(nullptr);
}

}  // namespace

absl::StatusOr<GenerateBody> GenerateRequestToJson(const v1::GenerateRequest& request) {
  GenerateBody out;
  json& body = out.body;
  body["model"] = request.model();
  switch (request.input_case()) {
    case v1::GenerateRequest::kPrompt:
      body["prompt"] = request.prompt();
      break;
    case v1::GenerateRequest::kPromptTokenIds:
      body["prompt"] = Array(request.prompt_token_ids().ids());
      break;
    case v1::GenerateRequest::kMessages: {
      out.kind = ApiKind::kChat;
      json messages = json::array();
      for (const v1::ChatMessage& message : request.messages().messages()) {
        json entry = {{"role", message.role()}, {"content", message.content()}};
        if (!message.name().empty()) entry["name"] = message.name();
        messages.push_back(std::move(entry));
      }
      body["messages"] = std::move(messages);
      break;
    }
    case v1::GenerateRequest::INPUT_NOT_SET:
      return WithParam(absl::InvalidArgumentError("give one of prompt, prompt_token_ids, messages"),
                       "input");
  }
  const v1::SamplingParams& s = request.sampling();
  if (s.has_temperature()) body["temperature"] = s.temperature();
  if (s.has_top_p()) body["top_p"] = s.top_p();
  if (s.has_top_k()) body["top_k"] = s.top_k();
  if (s.has_min_p()) body["min_p"] = s.min_p();
  if (s.has_seed()) body["seed"] = s.seed();
  if (s.has_presence_penalty()) body["presence_penalty"] = s.presence_penalty();
  if (s.has_frequency_penalty()) body["frequency_penalty"] = s.frequency_penalty();
  if (s.has_repetition_penalty()) body["repetition_penalty"] = s.repetition_penalty();
  if (!s.logit_bias().empty()) {
    json bias = json::object();
    for (const auto& [token, value] : s.logit_bias()) bias[std::to_string(token)] = value;
    body["logit_bias"] = std::move(bias);
  }
  if (request.has_max_tokens()) body["max_tokens"] = request.max_tokens();
  if (request.min_tokens() != 0) body["min_tokens"] = request.min_tokens();
  if (request.has_n()) body["n"] = request.n();
  if (!request.stop().empty()) body["stop"] = Array(request.stop());
  if (!request.stop_token_ids().empty()) body["stop_token_ids"] = Array(request.stop_token_ids());
  if (request.ignore_eos()) body["ignore_eos"] = true;
  if (request.has_logprobs()) {
    if (out.kind == ApiKind::kChat) {
      body["logprobs"] = true;
      body["top_logprobs"] = request.logprobs();
    } else {
      body["logprobs"] = request.logprobs();
    }
  }
  if (!request.documents().empty()) {
    body["documents"] = Array(request.documents());
  }
  if (request.priority() != 0) body["priority"] = request.priority();
  if (request.has_skip_special_tokens())
    body["skip_special_tokens"] = request.skip_special_tokens();
  if (request.has_add_generation_prompt()) {
    body["add_generation_prompt"] = request.add_generation_prompt();
  }
  if (!request.chat_template_kwargs_json().empty()) {
    absl::StatusOr<json> kwargs =
        engine::ParseBoundedJson(request.chat_template_kwargs_json(), "chat_template_kwargs_json");
    if (!kwargs.ok() || !kwargs->is_object()) {
      return WithParam(kwargs.ok() ? absl::InvalidArgumentError(
                                         "chat_template_kwargs_json must be a JSON object")
                                   : kwargs.status(),
                       "chat_template_kwargs_json");
    }
    body["chat_template_kwargs"] = *std::move(kwargs);
  }
  if (request.has_keepkv()) {
    absl::StatusOr<json> keepkv = KeepKvJson(request.keepkv());
    if (!keepkv.ok()) return keepkv.status();
    body["keepkv"] = *std::move(keepkv);
  }
  // Streaming is gRPC's own; the parser only checks that usage options come with it.
  body["stream"] = true;
  return out;
}

}  // namespace kvd::server
