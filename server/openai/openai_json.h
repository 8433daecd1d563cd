// JSON pieces of OpenAI requests and responses: a request body, usage, and the logprobs
// formats of the completions API (parallel arrays) and of the chat API (a list of token objects).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "engine/sampling.h"
#include "nlohmann/json.hpp"
#include "scheduler/request.h"
#include "text/bounded_json.h"
#include "text/tokenizer.h"

namespace kvd::server {

// {prompt_tokens, completion_tokens, total_tokens}, and prompt_tokens_details.cached_tokens
// when a stored document supplied some of the prompt.
nlohmann::json UsageJson(const scheduler::Usage& usage);

// Whether `value` is an object whose `key` holds the string `expected` (never throws, whatever
// the value's shape).
template <typename Json>
bool StringFieldIs(const Json& value, std::string_view key, std::string_view expected) {
  if (!value.is_object()) return false;
  const auto it = value.find(std::string(key));
  return it != value.end() && it->is_string() &&
         it->template get_ref<const std::string&>() == expected;
}

// A request body that must be a JSON object nested no deeper than text::kMaxJsonDepth;
// InvalidArgument otherwise. `Json` nlohmann::ordered_json keeps the keys in the client's order
// (what a chat template prints and a schema orders its output by).
template <typename Json = nlohmann::json>
[[nodiscard]] absl::StatusOr<Json> ParseJsonObjectBody(std::string_view body) {
  absl::StatusOr<Json> parsed = text::ParseBoundedJson<Json>(body, "the request body");
  if (!parsed.ok()) {
    if (absl::StrContains(parsed.status().message(), "deeper")) return parsed.status();
    return absl::InvalidArgumentError(
        "the request body is not valid JSON; send a JSON object with Content-Type: "
        "application/json");
  }
  if (!parsed->is_object()) {
    return absl::InvalidArgumentError("the request body must be a JSON object");
  }
  return parsed;
}

// Completions' logprobs for an echoed, scored prompt: the prompt's tokens first (the first
// with null logprob and alternatives, as OpenAI's legacy API), then the completion's;
// `echoed` is the echoed text's size, where the completion's offsets start.
nlohmann::json EchoedLogprobsJson(const text::Tokenizer& tokenizer,
                                  const std::vector<int32_t>& prompt,
                                  const std::vector<engine::SampledToken>& prompt_logprobs,
                                  const std::vector<engine::SampledToken>& completion,
                                  size_t echoed);
// vLLM's `prompt_logprobs`: null for the first prompt token, then per token an object by token
// id (as a string) of {logprob, rank, decoded_token}, the token itself and its alternatives.
nlohmann::json PromptLogprobsJson(const text::Tokenizer& tokenizer,
                                  const std::vector<int32_t>& prompt,
                                  const std::vector<engine::SampledToken>& scored);
// Completions `logprobs` for `tokens` whose text starts at `text_offset` in the choice's text.
nlohmann::json CompletionLogprobsJson(const text::Tokenizer& tokenizer,
                                      const std::vector<engine::SampledToken>& tokens,
                                      size_t text_offset);
// Chat `logprobs`: {"content": [{token, logprob, bytes, top_logprobs}]}.
nlohmann::json ChatLogprobsJson(const text::Tokenizer& tokenizer,
                                const std::vector<engine::SampledToken>& tokens);

// `prefix` and 24 random hex digits: a response id ("chatcmpl-"), a tool call's ("call_").
std::string RandomId(std::string_view prefix);

// Serializes with invalid UTF-8 (a token holding part of a character) replaced, never thrown.
std::string Dump(const nlohmann::json& value);
// The same, keys in the order they were set (a Responses API object, as OpenAI orders it).
std::string DumpOrdered(const nlohmann::ordered_json& value);
// One server-sent event: "data: <json>\n\n".
std::string SseData(const nlohmann::json& value);

}  // namespace kvd::server
