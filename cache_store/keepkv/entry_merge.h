// One merge of two entries of a (layer, kv head) by any KeepKV method, given the queries the
// merge is made for: the dispatcher over the exact rules (ZIP, GQA fit) and the simple ones the
// benchmarks compare them with (weighted mean, plain average).
#pragma once

#include <span>

#include "absl/status/statusor.h"
#include "cache_store/keepkv/keepkv_params.h"
#include "cache_store/keepkv/zip_merge.h"

namespace kvd::cache_store {

// The queries a merge is made for: m vectors of head_dim ([m, head_dim], after RoPE) and the
// logit scale (1 / sqrt(head_dim)). The inputs' `logits` hold each entry's m logits under them.
struct MergeQueries {
  std::span<const float> vectors;
  float scale = 1.0f;
};

// Merges `evicted` into `kept` by `method` (never kEvict: eviction merges nothing).
[[nodiscard]] absl::StatusOr<MergedEntry> MergeEntries(MergeMethod method,
                                                       const MergeInput& evicted,
                                                       const MergeInput& kept,
                                                       const MergeQueries& queries);

}  // namespace kvd::cache_store
