// Numeric helpers the merge rules share: sums of exponentials in the log domain (so that
// logits of 80 or more do not overflow) and the checks of a merge's inputs.
#pragma once

#include <algorithm>
#include <cmath>
#include <span>

#include "absl/status/status.h"
#include "cache_store/keepkv/zip_merge.h"

namespace kvd::cache_store {

// ln(exp(a) + exp(b)).
inline double LogAddExp(double a, double b) {
  const double hi = std::max(a, b);
  return hi + std::log1p(std::exp(std::min(a, b) - hi));
}

// ln of the sum of exp over `logits` (not empty): a GQA group's summed score.
inline double LogSumExp(std::span<const float> logits) {
  double hi = logits[0];
  for (float l : logits) hi = std::max(hi, static_cast<double>(l));
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - hi);
  return hi + std::log(sum);
}

inline bool AllFinite(std::span<const float> xs) {
  return std::all_of(xs.begin(), xs.end(), [](float x) { return std::isfinite(x); });
}

// InvalidArgument, naming the entry (`name`), for an empty key or logits, a value of another
// length than the key, or anything not finite.
absl::Status CheckMergeInput(const MergeInput& in, const char* name);
// Both entries checked, and of the same head_dim and query count.
absl::Status CheckMergePair(const MergeInput& evicted, const MergeInput& kept);

}  // namespace kvd::cache_store
