// What a document upload asks for: the compression method (KVzip or a baseline) and how much
// of the document's KV cache to keep.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "cache_store/store/document_payload.h"

namespace kvd::cache_store {

enum class CompressionMethod {
  kNone,        // keep everything
  kKvzip,       // query-agnostic: max attention while the model reconstructs the document
  kKvzipHeads,  // context-independent: heads ranked by a per-model profile (head_profile.h)
  kSnapKv,      // query-aware: attention of one given question (baseline)
  kH2O,         // attention accumulated during prefill, plus the most recent entries (baseline)
  kStreaming,   // the prefix (attention sinks) and the most recent entries (baseline)
};

// "none", "kvzip", "kvzip_heads", "snapkv", "h2o", "streaming"; and back (InvalidArgument
// otherwise).
const char* CompressionMethodName(CompressionMethod method);
[[nodiscard]] absl::StatusOr<CompressionMethod> ParseCompressionMethod(std::string_view name);
// The algorithm's version string, part of a stored cache's identity: bumped whenever prompts,
// chunking, softmax precision or selection change, so older caches are refused, not reused.
const char* CompressionMethodVersion(CompressionMethod method);

struct CompressionSpec {
  CompressionMethod method = CompressionMethod::kKvzip;
  // Fraction of the document's KV entries (over all layers and kv heads) kept, in (0, 1].
  double ratio = 1.0;
  // Instead of `ratio`: keep as many entries as this many document tokens have.
  std::optional<int64_t> budget_tokens;
  // snapkv: the question whose attention scores the document.
  std::string query;
  // The precision the cache is stored in (store/kv_storage.h); its scores are rounded the same
  // way before the cut, so a later re-cut from the stored scores picks what this cut picks.
  KvStorage kv_dtype = KvStorage::kF32;
  // Fold the entries the cut drops into the kept ones (entry_folding.h) instead of evicting
  // them. kvzip and kvzip_heads only: the fold weighs entries by their scores.
  bool merge = false;

  // InvalidArgument naming the problem: a ratio outside (0, 1], a budget below 1, none with a
  // ratio below 1, snapkv without a query or a query for another method, merge with a method
  // other than kvzip and kvzip_heads.
  [[nodiscard]] absl::Status Validate() const;
  // Document entries kept out of `document_entries` (document tokens × layers × kv heads):
  // at least one, at most all.
  int64_t KeptEntries(int64_t document_entries, int64_t entries_per_token) const;
};

}  // namespace kvd::cache_store
