// Which entries of one (layer, kv head) KeepKV merges, two ways: disjoint pairs of mergeable
// entries with the most similar keys, the lower-scored of each folded into the other; or the
// lowest-scored entries, each folded into its most similar remaining entry.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace kvd::cache_store {

struct MergePair {
  int32_t evicted = 0;  // folded into `kept` and then removed
  int32_t kept = 0;
  float cosine = 0.0f;  // of the two keys
};

struct MergePairOptions {
  int32_t max_pairs = 0;    // at most this many pairs in one pass
  float min_cosine = 0.8f;  // pairs less similar than this are never merged
};

// Entries are `keys.size() / head_dim` rows of `head_dim`; `mergeable[i]` is false for entries
// no merge may touch (attention sinks, the system prefix, a shared document's entries, the most
// recent ones); `scores[i]` is the entry's (predicted) attention, which decides which side of a
// pair is evicted (the lower; ties to the earlier). Returns up to max_pairs disjoint pairs,
// most similar first.
//
// Cost: one pass finds every entry's most similar mergeable partner, O(n² · head_dim), then
// matches greedily along those edges, O(n log n), taking many pairs at once: with m pairs per
// pass a merge costs O(n² · head_dim / m), O(n · head_dim) when m grows with n. An entry whose
// best partner was taken by a more similar pair waits for the next pass.
std::vector<MergePair> SelectMergePairs(std::span<const float> keys, int32_t head_dim,
                                        std::span<const uint8_t> mergeable,
                                        std::span<const float> scores,
                                        const MergePairOptions& options);

// The `count` lowest-scored mergeable entries (ties to the earlier), in ascending score, each
// with the entry still there of the most similar key as `kept` among those whose key cosine is
// >= min_cosine and whose value cosine is >= min_value_cosine (possibly one of the later of
// these, so that the last of a group of similar keys carries the group's votes), or -1 when
// none qualifies (the entry is evicted). `values` are rows like `keys`. Apply in order.
//
// Cost: O(count · n · head_dim) for n entries, in one pass.
std::vector<MergePair> SelectLowestScoredMerges(std::span<const float> keys,
                                                std::span<const float> values, int32_t head_dim,
                                                std::span<const uint8_t> mergeable,
                                                std::span<const float> scores, int32_t count,
                                                float min_cosine, float min_value_cosine);

}  // namespace kvd::cache_store
