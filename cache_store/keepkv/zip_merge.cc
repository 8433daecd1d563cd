#include "cache_store/keepkv/zip_merge.h"

#include <cmath>
#include <cstddef>
#include <string>

#include "cache_store/keepkv/merge_math.h"

namespace kvd::cache_store {

absl::Status CheckMergeInput(const MergeInput& in, const char* name) {
  if (in.key.empty() || in.logits.empty()) {
    return absl::InvalidArgumentError(std::string(name) + ": empty key or logits");
  }
  if (in.value.size() != in.key.size()) {
    return absl::InvalidArgumentError(std::string(name) + ": key and value lengths differ");
  }
  if (!AllFinite(in.key) || !AllFinite(in.value) || !AllFinite(in.logits) ||
      !std::isfinite(in.log_vote)) {
    return absl::InvalidArgumentError(std::string(name) + ": non-finite input");
  }
  return absl::OkStatus();
}

absl::Status CheckMergePair(const MergeInput& evicted, const MergeInput& kept) {
  if (absl::Status s = CheckMergeInput(evicted, "evicted"); !s.ok()) return s;
  if (absl::Status s = CheckMergeInput(kept, "kept"); !s.ok()) return s;
  if (evicted.key.size() != kept.key.size()) {
    return absl::InvalidArgumentError("entries have different head_dim");
  }
  if (evicted.logits.size() != kept.logits.size()) {
    return absl::InvalidArgumentError("entries have different query counts");
  }
  return absl::OkStatus();
}

absl::Status ZipMergeOptions::Validate() const {
  if (!(min_key_scale > 0.0) || !(max_key_scale >= min_key_scale) ||
      !std::isfinite(max_key_scale)) {
    return absl::InvalidArgumentError("key scale bounds must satisfy 0 < min <= max < inf");
  }
  if (!(min_abs_denominator >= 0.0) || !std::isfinite(min_abs_denominator)) {
    return absl::InvalidArgumentError("min_abs_denominator must be finite and >= 0");
  }
  return absl::OkStatus();
}

absl::StatusOr<MergedEntry> ZipMerge(const MergeInput& evicted, const MergeInput& kept,
                                     const ZipMergeOptions& options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  if (absl::Status s = CheckMergePair(evicted, kept); !s.ok()) return s;

  // Log domain throughout: ln s, ln w = ln p + ln s, ln W, ln P.
  const double log_s_e = LogSumExp(evicted.logits);
  const double log_s_c = LogSumExp(kept.logits);
  const double log_w_e = evicted.log_vote + log_s_e;
  const double log_w_c = kept.log_vote + log_s_c;
  const double log_w_sum = LogAddExp(log_w_e, log_w_c);
  const double log_p_sum = LogAddExp(evicted.log_vote, kept.log_vote);
  // Normalised weights w / W; they sum to 1 and never overflow.
  const double alpha_e = std::exp(log_w_e - log_w_sum);
  const double alpha_c = std::exp(log_w_c - log_w_sum);

  const double target = log_w_sum - log_p_sum;                      // L
  const double mean_logit = alpha_e * log_s_e + alpha_c * log_s_c;  // D

  MergedEntry out;
  out.target_logit = target;
  FallbackReason reason = FallbackReason::kNone;
  if (std::abs(mean_logit) < options.min_abs_denominator) {
    reason = FallbackReason::kNearZeroDenominator;
  } else {
    out.key_scale = target / mean_logit;
    if (!(out.key_scale > 0.0)) {
      reason = FallbackReason::kNegativeScale;
    } else if (out.key_scale < options.min_key_scale || out.key_scale > options.max_key_scale) {
      reason = FallbackReason::kScaleOutOfBounds;
    }
  }
  out.fallback = reason;
  out.rule = reason == FallbackReason::kNone ? MergeRule::kZip : MergeRule::kWeightedMean;
  const double scale = out.rule == MergeRule::kZip ? out.key_scale : 1.0;

  const size_t head_dim = kept.key.size();
  out.key.resize(head_dim);
  out.value.resize(head_dim);
  for (size_t i = 0; i < head_dim; ++i) {
    out.key[i] = static_cast<float>(scale * (alpha_e * evicted.key[i] + alpha_c * kept.key[i]));
    out.value[i] = static_cast<float>(alpha_e * evicted.value[i] + alpha_c * kept.value[i]);
  }
  // The mean key's logit is D (linear in the key), so ln p_r = ln W - D keeps p_r exp(D) = W.
  const bool absorb =
      out.rule == MergeRule::kWeightedMean && options.preserve_denominator_on_fallback;
  out.log_vote = static_cast<float>(absorb ? log_w_sum - mean_logit : log_p_sum);
  return out;
}

}  // namespace kvd::cache_store
