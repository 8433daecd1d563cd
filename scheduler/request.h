// What a caller asks the scheduler for (a Request, with its tenant's policy) and what comes back
// on the request's stream (Events).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "cache_store/keepkv/keepkv_params.h"
#include "cache_store/store/document_payload.h"
#include "engine/sampling.h"
#include "structured/constraint.h"

namespace kvd::scheduler {

// How a tenant shares the engine with others. Copied into each of its requests.
struct TenantPolicy {
  std::string id = "default";  // the tenant's name
  double weight = 1.0;         // share of processed tokens under contention, > 0
  // Sequences of this tenant running at once; more wait in the queue. 0: no limit of its own.
  int32_t max_running_sequences = 0;
  // Requests of this tenant waiting at once; more are refused (ResourceExhausted). 0: no limit.
  int32_t max_queued_requests = 0;
  // Cached prompt prefixes are shared only between requests with the same salt: empty, the
  // tenant's own; otherwise a group's that tenants opt into.
  std::string prefix_cache_salt;
};

// A stored document a request continues: its compressed cache is the prompt's prefix. Requests
// with the same key share one copy of the cache's blocks, read-only.
struct DocumentPrefix {
  std::string key;  // names this exact cache: tenant, document id and cache identity
  std::shared_ptr<const cache_store::DocumentPayload> payload;
};

// The most stop strings one request may carry; Submit refuses more.
inline constexpr size_t kMaxStopStrings = 16;

struct Request {
  TenantPolicy tenant;
  // Lower values are served first (as vLLM's `priority`); equal priorities share fairly.
  int32_t priority = 0;
  // Token ids, BOS included where the model wants one; with a document, the tokens after it.
  std::vector<int32_t> prompt;
  // The prompt continues this document's cache, at positions after its original length.
  std::optional<DocumentPrefix> document;
  engine::SamplingParams sampling;
  int32_t n = 1;  // completions of the same prompt; they share the prompt's KV blocks
  // At least 1; 0 with prompt_logprobs scores the prompt without generating (n must be 1).
  int32_t max_tokens = 16;
  int32_t min_tokens = 0;  // stop tokens and strings are ignored before this many tokens
  bool ignore_eos = false;
  std::vector<int32_t> stop_token_ids;  // finish on these as on end-of-sequence
  std::vector<std::string> stop;        // finish before these strings; never emitted
  bool skip_special_tokens = true;      // leave special tokens out of the text
  // Added to the tenant's prefix cache salt (vLLM's `cache_salt`): only requests with the same
  // salt share cached prefixes.
  std::string cache_salt;
  // Keeps each sequence's own KV under a budget by merging entries (KeepKV); none: unbounded.
  std::optional<cache_store::KeepKvParams> keepkv;
  // Every completion's output stays in this constraint's language and ends, with an end token,
  // only where it is whole (structured outputs); null: free text. Its vocabulary must be the
  // model's; ignore_eos and min_tokens cannot be combined with it.
  std::shared_ptr<const structured::Constraint> constraint;
  // Scores the prompt too (vLLM's prompt_logprobs; OpenAI's echo with logprobs): each choice's
  // first event carries every prompt token's logprob after the first, with this many most
  // likely alternatives (0 to 20). Every prompt position is computed (no prefix cache); not
  // with a document or a KV budget. Unset, no row of a prompt's logits is read.
  std::optional<int32_t> prompt_logprobs;
  // Draft tokens per step at most for this request's sequences under speculative decoding
  // (SchedulerConfig::speculative), in [0, 32]; 0: none; above the config's, the config's.
  // Unset: the config's.
  std::optional<int32_t> num_speculative_tokens;
};

enum class FinishReason {
  kStop,    // end-of-sequence, a stop token or a stop string
  kLength,  // max_tokens, the model's context, or a KV cache the sequence fills alone
  kAbort,   // cancelled
};

// OpenAI's name for a finish reason: "stop", "length" or "abort".
std::string_view FinishReasonName(FinishReason reason);

struct Usage {
  int32_t prompt_tokens = 0;      // a document's original length included
  // Of those, the tokens not computed for this request: a stored document's, or a prefix
  // computed earlier (prefix cache).
  int32_t cached_tokens = 0;
  int32_t completion_tokens = 0;  // over all n completions
  int32_t total_tokens() const { return prompt_tokens + completion_tokens; }
};

// One item of a request's stream. Token events carry a choice's new tokens and text; the
// choice's last one has finish_reason. The stream ends with one final event (`final`), which
// has the usage, or an error status.
struct Event {
  int32_t index = 0;               // which of the n completions
  std::vector<int32_t> token_ids;  // sampled since the previous event of this choice
  std::string text;                // text released since then (held back near a stop string)
  std::vector<engine::SampledToken> logprobs;  // one per token id, when asked for
  // On a choice's first event, with prompt_logprobs: one per prompt token after the first.
  std::vector<engine::SampledToken> prompt_logprobs;
  std::optional<FinishReason> finish_reason;
  std::string stop_string;            // the stop string that finished the choice
  std::optional<int32_t> stop_token;  // the stop or end-of-sequence id that finished it
  bool final = false;
  Usage usage;          // set on the final event
  absl::Status status;  // non-OK on a final event that ends in an error
};

}  // namespace kvd::scheduler
