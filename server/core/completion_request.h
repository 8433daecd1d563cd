// A completion request as a client sent it, in the one typed form both protocols fill: HTTP's
// JSON body (completion_request_json.h) and gRPC's GenerateRequest (grpc/generate_request.h).
// A reader checks only what its wire format can get wrong (types, shapes, unknown keys);
// ResolveCompletionParams (completion_params.h) checks the values against the model, the
// tenant and the API's ranges, once for both. An empty optional is a field the client left out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "cache_store/keepkv/keepkv_fields.h"
#include "engine/sampling_fields.h"
#include "nlohmann/json.hpp"
#include "structured/constraint_spec.h"
#include "structured/json_rules.h"

namespace kvd::server {

enum class ApiKind { kCompletion, kChat };

// One completions prompt: text, or token ids as sent (not yet checked against the vocabulary).
using PromptInput = std::variant<std::string, std::vector<int64_t>>;

// A function the model may call (a `tools` entry), as the client wrote it.
struct ToolDefinition {
  std::string name;
  structured::JsonValue entry;       // the whole entry, keys in the client's order: the template's
  structured::JsonValue parameters;  // its arguments' JSON Schema; null when not given
};

// `tool_choice`: whether the model may, must, or must not call a tool, or which one it calls.
struct ToolChoice {
  enum class Kind { kNone, kAuto, kRequired, kFunction };
  Kind kind = Kind::kAuto;
  std::string function;  // kFunction: the name

  friend bool operator==(const ToolChoice&, const ToolChoice&) = default;
};

// A request's KeepKV fields over its tenant's defaults (docs/api.md, KeepKV).
struct KeepKvRequest {
  bool disabled = false;  // HTTP "keepkv": null, gRPC KeepKv.disabled: off for this request
  // The rows of cache_store::kKeepKvFields the client set, each as it wrote it.
  std::vector<std::pair<const cache_store::KeepKvField*, cache_store::KeepKvValue>> settings;
};

struct CompletionRequest {
  ApiKind kind = ApiKind::kCompletion;
  std::string model;

  // Completions: the prompts, in order.
  std::vector<PromptInput> prompts;
  bool echo = false;
  std::optional<int64_t> logprobs;  // top alternatives per token
  // vLLM's: the prompt's tokens scored, each with this many most likely alternatives.
  std::optional<int64_t> prompt_logprobs;

  // Chat: the messages as the chat template reads them, each an object with string "role" and
  // "content" (text parts joined) and whatever else the client sent.
  nlohmann::json messages = nlohmann::json::array();
  std::optional<bool> add_generation_prompt;
  nlohmann::json chat_template_kwargs = nlohmann::json::object();
  std::optional<int64_t> max_completion_tokens;
  std::vector<ToolDefinition> tools;
  std::optional<ToolChoice> tool_choice;  // empty: auto with tools, none without
  bool parallel_tool_calls = true;
  bool chat_logprobs = false;
  std::optional<int64_t> top_logprobs;

  // The rows of engine::kSamplingFields the client set, each with the number it sent.
  std::vector<std::pair<const engine::SamplingField*, double>> sampling;
  std::optional<int64_t> seed;
  std::vector<std::pair<std::string, double>> logit_bias;  // token id as sent, bias
  std::optional<int64_t> max_tokens;
  std::optional<int64_t> min_tokens;
  std::optional<int64_t> n;
  std::vector<std::string> stop;
  std::vector<int64_t> stop_token_ids;
  bool ignore_eos = false;
  std::optional<int64_t> num_speculative_tokens;  // kvd's: draft tokens per step, 0: none
  std::optional<bool> skip_special_tokens;
  std::optional<int64_t> priority;
  std::optional<std::string> cache_salt;  // vLLM's: only equal salts share cached prefixes
  std::vector<std::string> documents;     // stored document ids the prompt continues
  std::optional<KeepKvRequest> keepkv;    // empty: the tenant's default
  // Structured outputs: response_format, structured_outputs or a guided_* field, and the
  // parameter it came from (for errors).
  std::optional<structured::ConstraintSpec> structured_output;
  std::string structured_output_param;
  // How constrained JSON (the structured output and forced tool calls) spaces its tokens.
  structured::JsonWhitespace json_whitespace = structured::JsonWhitespace::kCompact;
  bool stream = false;
  bool include_usage = false;
  std::string user;
};

// The number the client sent for the sampling parameter `name`, if it sent one.
inline std::optional<double> SentSampling(const CompletionRequest& request, std::string_view name) {
  for (const auto& [field, value] : request.sampling) {
    if (field->name == name) return value;
  }
  return std::nullopt;
}

}  // namespace kvd::server
