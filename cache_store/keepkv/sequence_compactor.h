// KeepKV's state of one (layer, kv head) of a sequence and the pass that brings it down to a
// target length: the lowest-ranked entries folded into the attention sink or into similar
// neighbours, or disjoint pairs of similar keys merged (what no fold takes is evicted), in the
// pool and in the state alike.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "cache_store/keepkv/keepkv_params.h"
#include "engine/kv_cache.h"

namespace kvd::cache_store {

// One of the sequence's own tokens inside an entry, with the part of the entry's attention it
// is credited with (1 for an unmerged token; a merge splits by the merge weights).
struct TokenShare {
  int32_t token = 0;  // index among the sequence's own tokens
  float share = 1.0f;
};

// A cached entry of the sequence's own tokens.
struct EntryState {
  float score = 0.0f;  // bias-corrected EMA of its attention (mean probability per query head)
  // What decides which entries go, lowest first: the prompt's scores max-pooled over neighbours
  // (KeepKvParams::pool) until the first decode step, the EMA from then on.
  float rank = 0.0f;
  int32_t updates = 0;              // EMA updates so far
  int32_t position = 0;             // the newest position among its tokens
  float log_vote = 0.0f;            // ln p, as in the pool
  std::vector<TokenShare> members;  // kept only when refreshes need them
};

// The own entries of one (layer, kv head): entry i is cache entry `base + i`; the `base`
// entries before them are a shared document's, never touched.
struct HeadState {
  int32_t base = 0;
  std::vector<EntryState> entries;
};

// What a compaction pass works with, for one (layer, kv head).
struct CompactionInput {
  int32_t layer = 0;
  int32_t kv_head = 0;
  int32_t target = 0;  // own entries to keep at most
  // Entries whose newest position lies in [first_mergeable, last_mergeable] may be merged:
  // below are the sinks and the protected prefix, above the most recent positions.
  int32_t first_mergeable = 0;
  int32_t last_mergeable = 0;
  // The step's scored queries of this layer ([rows, num_heads * head_dim], after RoPE) and the
  // number of query heads per kv head; merges are made for the group's rows.
  std::span<const float> queries;
  int32_t rows = 0;
  int32_t group = 1;
  int32_t head_dim = 0;
  // The step's own probabilities of this head's entries (mean per query head), indexed like
  // the cache entries; with the EMA they give the predicted logit of every entry.
  std::span<const float> step_scores;
};

struct CompactionCounts {
  int64_t merges = 0;
  int64_t evictions = 0;
  // Merges whose exact rule (ZIP, GQA fit) was unsafe and fell back to the weighted mean.
  int64_t fallbacks = 0;
};

// Removes own entries of (layer, kv head) until at most `target` remain, or none is mergeable:
// never one outside the mergeable positions or in a block shared with another sequence.
[[nodiscard]] absl::StatusOr<CompactionCounts> CompactHead(engine::SequenceKv& kv,
                                                           engine::KvBlockPool& pool,
                                                           HeadState& state,
                                                           const KeepKvParams& params,
                                                           const CompactionInput& input);

}  // namespace kvd::cache_store
