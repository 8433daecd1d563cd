// What syncing the document store's writes costs: the store writes of one upload (its
// processing meta, then meta and payload in one batch) timed with DocumentStoreOptions::sync_writes
// on and off, in interleaved rounds on fresh stores, for documents of several lengths with a
// model's KV geometry. Payloads are seeded random values of a compressed cache's shape.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model_config.h"

namespace kvd::bench {

struct StoreWriteBenchOptions {
  // Where the stores are created (one fresh directory per round, removed after it): the disk
  // being measured.
  std::filesystem::path dir;
  // Lengths of the uncompressed documents, in tokens; one table row per length and setting.
  std::vector<int32_t> document_tokens = {256, 2048};
  double ratio = 0.3;    // kept fraction of each document's entries (documents.default_ratio)
  int32_t uploads = 32;  // uploads per round
  int32_t rounds = 9;    // timed rounds per setting, on and off interleaved, after a warm-up
  uint64_t seed = 1;
};

struct StoreWriteBenchRow {
  int32_t document_tokens = 0;
  int64_t payload_bytes = 0;  // one upload's encoded payload
  bool sync_writes = false;
  double median_upload_ms = 0.0;      // median over the rounds of each round's median upload
  double p90_upload_ms = 0.0;         // 90th percentile of every timed upload
  double uploads_per_second = 0.0;    // median over the rounds
  double megabytes_per_second = 0.0;  // payload bytes written, median over the rounds
};

// Rows in the order of `document_tokens`, sync on before off for each.
[[nodiscard]] absl::StatusOr<std::vector<StoreWriteBenchRow>> MeasureStoreWrites(
    const engine::ModelConfig& model, const StoreWriteBenchOptions& options);

}  // namespace kvd::bench
