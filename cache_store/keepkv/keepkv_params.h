// What KeepKV does for one sequence: its KV budget, the EMA decay, the scoring window, the
// refresh period, the protected entries and the merge rule. Server config, tenant defaults and
// a request's "keepkv" object all fill one of these.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kvd::cache_store {

// How two entries of a (layer, kv head) become one.
enum class MergeMethod : uint8_t {
  kGqaFit,        // the key fitted to every query head of the group, votes added
  kGroupMean,     // ZIP-merging on the group's summed scores, votes added (default)
  kWeightedMean,  // score-weighted mean key and value, votes added, no key rescale
  kConvex,        // plain average of key and value, no votes
  kEvict,         // no merge: the lowest-scored entries are dropped
};

// Which entries a compaction merges.
enum class MergeSelection : uint8_t {
  // The lowest-scored entries, each into its most similar remaining entry (evicted when none
  // is similar enough): what eviction would drop, kept as votes in its neighbours (default).
  kLowestScores,
  // Disjoint pairs of the most similar keys, whatever their scores, the lower-scored of each
  // folded into the other.
  kSimilarPairs,
};

std::string_view MergeSelectionName(MergeSelection selection);
// "lowest_scores" or "similar_pairs".
absl::StatusOr<MergeSelection> ParseMergeSelection(std::string_view name);

std::string_view MergeMethodName(MergeMethod method);
// "gqa_fit", "group_mean", "weighted_mean", "convex" or "evict".
absl::StatusOr<MergeMethod> ParseMergeMethod(std::string_view name);

struct KeepKvParams {
  // The budget in entries per (layer, kv head) of the sequence's own tokens (a shared document's
  // entries do not count): `budget_tokens` when > 0, else `budget_fraction` of the prompt's own
  // tokens, rounded up. A sequence under its budget is never touched.
  int32_t budget_tokens = 0;
  double budget_fraction = 0.5;  // in (0, 1]
  double alpha = 0.9;            // EMA decay of each entry's attention score, in [0, 1)
  int32_t window = 8;            // last prompt queries whose attention scores the prompt, >= 1
  // The prompt's scores are max-pooled over this many neighbouring positions (SnapKV's kernel),
  // so that the tokens next to an attended one (the rest of a name, a value) rank with it. Odd,
  // >= 1; 1: no pooling.
  int32_t pool = 7;
  int32_t refresh_every = 0;  // decode steps between refreshes from the full KV; 0: never
  int32_t recent = 16;        // the most recent positions are never merged, >= 0
  int32_t sink = 4;           // the first positions (attention sinks) are never merged, >= 0
  // Leading prompt tokens never merged (a chat's system turn); the server sets it.
  int32_t protected_prefix = 0;
  MergeMethod method = MergeMethod::kGroupMean;
  MergeSelection selection = MergeSelection::kLowestScores;
  float min_cosine = 0.5f;  // pairs of keys less similar than this are evicted, never merged

  // InvalidArgument naming the first bad field ("keepkv.alpha must be in [0, 1)").
  absl::Status Validate() const;
  // The budget for a prompt of `prompt_tokens` own tokens, at least 1.
  int32_t Budget(int32_t prompt_tokens) const;
};

}  // namespace kvd::cache_store
