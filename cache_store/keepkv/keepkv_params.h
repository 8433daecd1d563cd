// What KeepKV does for one sequence: its KV budget, the EMA decay, the scoring window, the
// refresh period, the protected entries and the merge rule. Server config, tenant defaults and
// a request's "keepkv" object all fill one of these, through the table of keepkv_fields.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "base/enum_names.h"

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
  // The lowest-scored entries, all folded into the first position's entry (the attention
  // sink): their attention is kept as its votes and no other entry changes.
  kIntoSink,
};

inline constexpr auto kMergeMethodNames = base::MakeEnumNames<MergeMethod>({
    {MergeMethod::kGqaFit, "gqa_fit"},
    {MergeMethod::kGroupMean, "group_mean"},
    {MergeMethod::kWeightedMean, "weighted_mean"},
    {MergeMethod::kConvex, "convex"},
    {MergeMethod::kEvict, "evict"},
});
inline constexpr auto kMergeSelectionNames = base::MakeEnumNames<MergeSelection>({
    {MergeSelection::kLowestScores, "lowest_scores"},
    {MergeSelection::kSimilarPairs, "similar_pairs"},
    {MergeSelection::kIntoSink, "into_sink"},
});

inline std::string_view MergeMethodName(MergeMethod method) {
  return kMergeMethodNames.Name(method);
}
inline std::string_view MergeSelectionName(MergeSelection selection) {
  return kMergeSelectionNames.Name(selection);
}

// How many of a sequence's own entries KeepKV keeps per (layer, kv head).
struct KeepKvBudget {
  int32_t tokens = 0;     // > 0: this many entries
  double fraction = 0.5;  // when tokens is 0: this fraction of the prompt's own tokens, (0, 1]

  bool operator==(const KeepKvBudget&) const = default;
};

// A KeepKV rule a value breaks: the field ("alpha") and what is wrong with the value
// ("must be in [0, 1), got 1.5"), for each caller to name the field its own way
// ("keepkv.alpha", "tenants[0].keepkv.alpha").
struct KeepKvViolation {
  std::string_view field;
  std::string message;
};

// The parameters of KeepKV for one sequence. Each one's name, who may set it, its range and
// its documentation are its row in kKeepKvFields (keepkv_fields.h); a new parameter is a member
// here and a row there.
struct KeepKvParams {
  // The budget in entries per (layer, kv head) of the sequence's own tokens (a shared
  // document's entries do not count). A sequence under its budget is never touched.
  KeepKvBudget budget;
  double alpha = 0.9;  // EMA decay of each entry's attention score
  int32_t window = 8;  // last prompt queries whose attention scores the prompt
  // The prompt's scores are max-pooled over this many neighbouring positions (SnapKV's kernel),
  // so that the tokens next to an attended one (the rest of a name, a value) rank with it.
  int32_t pool = 7;
  int32_t refresh_every = 0;  // decode steps between refreshes from the full KV; 0: never
  int32_t recent = 16;        // the most recent positions are never merged
  int32_t sink = 4;           // the first positions (attention sinks) are never merged
  // Leading prompt tokens never merged (a chat's system turn); the server sets it.
  int32_t protected_prefix = 0;
  MergeMethod method = MergeMethod::kGroupMean;
  MergeSelection selection = MergeSelection::kIntoSink;
  float min_cosine = 0.5f;  // pairs of keys less similar than this are evicted, never merged
  // Nor pairs of values less similar than this (-1: values are not compared).
  float min_value_cosine = -1.0f;

  // The first field whose value breaks its row's rule, in kKeepKvFields' order.
  std::optional<KeepKvViolation> Check() const;
  // InvalidArgument "keepkv.<field> <message>" for Check's violation.
  absl::Status Validate() const;
  // The budget for a prompt of `prompt_tokens` own tokens, at least 1.
  int32_t Budget(int32_t prompt_tokens) const;

  bool operator==(const KeepKvParams&) const = default;
};

}  // namespace kvd::cache_store
