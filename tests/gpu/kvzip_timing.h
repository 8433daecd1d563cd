// The device check's KVzip timing: one document's compression driven as the scheduler drives it
// on an idle server, with its prefill, its reconstruction scoring and its selection and read-out
// timed apart.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "cache_store/kvzip/document_prompts.h"
#include "engine/model.h"

namespace kvd::bench {

struct KvzipTimingOptions {
  int32_t document_tokens = 2048;  // the document's length, seeded random ids
  int32_t prefix_tokens = 5;       // the chat template's tokens before the document
  // Tokens per reconstruction chunk (the published method's 2000).
  int32_t chunk_tokens = cache_store::DocumentPrompts::kChunkTokens;
  int32_t max_num_batched_tokens = 2048;  // the scheduler's token budget per step
  int32_t block_size = 16;                // entries per KV block
  int32_t repeats = 3;                    // timed compressions after a warm-up; medians reported
  uint64_t seed = 1;
};

// Medians over the repeats; each phase ends with the backend synchronised.
struct KvzipTiming {
  int32_t prefill_tokens = 0;  // prefix and document
  int64_t scoring_tokens = 0;  // of all reconstruction passes together
  double prefill_ms = 0.0;
  double scoring_ms = 0.0;
  double finish_ms = 0.0;  // selecting the kept entries and reading them out to the host
};

// Runs cache_store's DocumentCompressor (KVzip, ratio 1) on seeded random ids and random prompt
// pieces as long as the published prompts' tokens: the timings depend only on the model's shape
// and the lengths.
[[nodiscard]] absl::StatusOr<KvzipTiming> MeasureKvzipScoring(engine::Model& model,
                                                              const KvzipTimingOptions& options);

}  // namespace kvd::bench
