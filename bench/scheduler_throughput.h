// Aggregate decode throughput of the serving scheduler at several concurrencies, and how much
// of a step is spent outside the forward pass (planning, sampling, detokenizing, events). With
// a shared prefix, every prompt starts with the same tokens (a system prompt): one request runs
// first, the others arrive once it has its first token, and each concurrency is measured with
// the prefix cache on and off. With a constraint, each concurrency is measured with it and
// without it (structured outputs' cost).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model.h"
#include "structured/constraint.h"
#include "text/tokenizer.h"

namespace kvd::bench {

struct SchedulerBenchOptions {
  std::vector<int32_t> concurrency = {1, 8, 32, 64};
  int32_t prompt_tokens = 128;  // per request, seeded random ids
  int32_t decode_tokens = 64;   // generated per request (end-of-sequence ignored)
  int32_t shared_prefix_tokens = 0;  // leading prompt tokens all requests share, < prompt_tokens
  kernels::DType kv_cache_dtype = kernels::DType::kF32;
  uint64_t seed = 1;
  // Measured with and without: every request's output held to it, end-of-sequence honoured
  // (the constraint should not let a value end within decode_tokens). Null: not measured.
  std::shared_ptr<const structured::Constraint> constraint;
};

struct SchedulerBenchResult {
  int32_t concurrency = 0;
  bool prefix_cache = true;
  bool constrained = false;
  int64_t prefill_tokens = 0;  // prompt tokens computed, over all requests
  // Submit to first token, averaged over the requests after the first (all with no shared
  // prefix).
  double mean_ttft_ms = 0.0;
  double decode_tokens_per_second = 0.0;  // over steps that only decode, all sequences together
  double decode_step_ms = 0.0;            // mean length of such a step
  double overhead_fraction = 0.0;         // of their time, outside the forward pass
  double total_seconds = 0.0;             // submit to the last token, prefill included
  // Of all steps' time, the share spent on constraints (masks and matcher advances).
  double constraint_fraction = 0.0;
};

// Runs `concurrency` requests through a Scheduler stepped on the calling thread (at once, or
// after a first one with a shared prefix).
// `tokenizer` may be null (no text produced).
[[nodiscard]] absl::StatusOr<std::vector<SchedulerBenchResult>> MeasureSchedulerThroughput(
    engine::Model& model, const text::Tokenizer* tokenizer, const SchedulerBenchOptions& options);

}  // namespace kvd::bench
