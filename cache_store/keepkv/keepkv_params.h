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
  kGqaFit,        // the key fitted to every query head of the group, votes added (default)
  kGroupMean,     // ZIP-merging on the group's summed scores, votes added
  kWeightedMean,  // score-weighted mean key and value, votes added, no key rescale
  kConvex,        // plain average of key and value, no votes
  kEvict,         // no merge: the lowest-scored entries are dropped
};

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
  int32_t refresh_every = 0;     // decode steps between refreshes from the full KV; 0: never
  int32_t recent = 16;           // the most recent positions are never merged, >= 0
  int32_t sink = 4;              // the first positions (attention sinks) are never merged, >= 0
  // Leading prompt tokens never merged (a chat's system turn); the server sets it.
  int32_t protected_prefix = 0;
  MergeMethod method = MergeMethod::kGqaFit;
  float min_cosine = 0.8f;  // pairs of keys less similar than this are evicted, never merged

  // InvalidArgument naming the first bad field ("keepkv.alpha must be in [0, 1)").
  absl::Status Validate() const;
  // The budget for a prompt of `prompt_tokens` own tokens, at least 1.
  int32_t Budget(int32_t prompt_tokens) const;
};

}  // namespace kvd::cache_store
