// Runs whole generations for a fixed set of prompts: one batched prefill, then batched decode
// steps until every sequence finishes. The serving scheduler replaces it for live traffic;
// `kvd generate` and the benchmarks use it directly.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "engine/kv_cache.h"
#include "engine/model.h"
#include "engine/sampling.h"

namespace kvd::engine {

enum class FinishReason { kStop, kLength };

struct GenerationRequest {
  std::vector<int32_t> prompt;  // token ids, BOS included where the model wants one
  SamplingParams sampling;
  int32_t max_tokens = 16;
  int32_t min_tokens = 0;  // end-of-sequence and stop ids are ignored before this many tokens
  bool ignore_eos = false;
  std::vector<int32_t> stop_token_ids;  // finish on these as on end-of-sequence
};

struct GenerationEvent {
  size_t sequence = 0;  // index into the requests
  SampledToken sampled;
  bool finished = false;
  FinishReason finish_reason = FinishReason::kLength;
};

class Generator {
 public:
  Generator(Model& model, KvBlockPool& pool) : model_(model), pool_(pool) {}

  // Generates for every request; `on_token` sees each token as it is sampled, and returning
  // false from it stops that sequence. Errors: a prompt that is empty, holds an unknown id or
  // does not fit the context (InvalidArgument), or no room in the KV pool (ResourceExhausted).
  // The KV blocks are returned to the pool in every case.
  [[nodiscard]] absl::Status Run(std::span<const GenerationRequest> requests,
                                 const std::function<bool(const GenerationEvent&)>& on_token);

 private:
  Model& model_;
  KvBlockPool& pool_;
};

}  // namespace kvd::engine
