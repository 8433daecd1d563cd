// What a stored, compressed document buys: the time to first token of a question over a long
// document computed from scratch, against compressing the document once (prefill, then KVzip's
// scoring) and asking over its stored cache, cut to several kept ratios, cold and resident.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "cache_store/kvzip/document_prompts.h"
#include "engine/model.h"

namespace kvd::bench {

struct DocumentBenchOptions {
  int32_t document_tokens = 8192;  // the document's length, seeded random ids
  int32_t prefix_tokens = 5;       // the chat template's tokens before the document
  int32_t question_tokens = 16;    // the question that follows the document
  // Kept fractions of the document's KV entries to measure, each in (0, 1].
  std::vector<double> ratios = {0.1, 0.2, 0.3, 0.5, 1.0};
  // Tokens per KVzip reconstruction chunk (the published method's 2000).
  int32_t chunk_tokens = cache_store::DocumentPrompts::kChunkTokens;
  int32_t max_num_batched_tokens = 2048;  // the scheduler's token budget per step
  uint64_t seed = 1;
};

struct DocumentRatioResult {
  double ratio = 0.0;
  int64_t kept_entries = 0;   // document entries kept over all (layer, kv head)
  size_t stored_bytes = 0;    // EncodePayload of the cut cache
  double cold_ttft_ms = 0.0;  // first question over the cache: loads it into the KV pool
  double warm_ttft_ms = 0.0;  // a second question: the cache is resident and shared
};

struct DocumentBenchResult {
  int32_t prefix_tokens = 0;
  int32_t document_tokens = 0;
  int32_t question_tokens = 0;
  double scratch_ttft_ms = 0.0;     // prefix + document + question on an idle scheduler
  int64_t prefill_work_tokens = 0;  // forward tokens of a compression with method none
  double prefill_seconds = 0.0;     // its time: prefill and reading the cache out
  int64_t kvzip_work_tokens = 0;    // forward tokens of a KVzip compression
  double kvzip_seconds = 0.0;       // prefill, chunked reconstruction scoring, reading out
  std::vector<DocumentRatioResult> ratios;

  double scoring_seconds() const { return kvzip_seconds - prefill_seconds; }
};

// Runs everything through one Scheduler stepped on the calling thread, one thing at a time,
// after a short warm-up request. The token ids are random: the timings depend only on the
// model's shape and the lengths.
[[nodiscard]] absl::StatusOr<DocumentBenchResult> MeasureDocuments(
    engine::Model& model, const DocumentBenchOptions& options);

}  // namespace kvd::bench
