// Prefill and decode throughput of the engine on a model, at several batch sizes.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model.h"

namespace kvd::bench {

struct ThroughputOptions {
  std::vector<int32_t> batch_sizes = {1, 8};
  int32_t prompt_tokens = 128;  // per sequence, prefilled in one batched step
  int32_t decode_tokens = 32;   // decode steps after the prefill
  int32_t block_size = 16;
  kernels::DType kv_cache_dtype = kernels::DType::kF32;
  uint64_t seed = 1;
  // Told true just before each batch's decode steps and false just after them (the warm-up's
  // included), so that a caller can look at the decode steps alone.
  std::function<void(bool decoding)> decode_phase;
};

struct ThroughputResult {
  int32_t batch_size = 0;
  double prefill_seconds = 0.0;
  double prefill_tokens_per_second = 0.0;
  double prefill_gflop_per_second = 0.0;  // PromptTokenFlops at prefill_tokens_per_second
  double decode_seconds = 0.0;
  double decode_tokens_per_second = 0.0;  // tokens of all sequences together
  double decode_step_ms = 0.0;
};

// Floating-point operations (a multiply-add counting two) a token of a `prompt_tokens`-token
// prompt costs on average: its projections, its attention over the entries up to its own, and its
// share of the one row of LM-head logits a prompt needs.
double PromptTokenFlops(const engine::ModelConfig& config, int32_t prompt_tokens);

// Prompts are seeded random token ids; each decode step feeds the greedy token back.
[[nodiscard]] absl::StatusOr<std::vector<ThroughputResult>> MeasureThroughput(
    engine::Model& model, const ThroughputOptions& options);

}  // namespace kvd::bench
