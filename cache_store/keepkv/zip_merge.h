// KeepKV's merge rule: folds one KV entry into another of the same (layer, kv head) so that
// the attention output at the merge step is unchanged, as pure math on host vectors.
//
// Every entry carries a log-vote ln p that attention adds to its logit, so an entry's softmax
// numerator is w = p * s with s = exp(q.k / sqrt(d)). ZIP-merging entry e into entry c:
//   v_r = (w_e v_e + w_c v_c) / W                          with W = w_e + w_c
//   k_r = (w_e k_e + w_c k_c) / W * f                      f = L / D
//   L = ln(W / (p_e + p_c))     (the logit the merged entry needs)
//   D = (w_e ln s_e + w_c ln s_c) / W   (the logit the weighted-mean key gets)
//   ln p_r = ln(p_e + p_c)
// so that q.k_r / sqrt(d) = L and p_r exp(L) = W: the softmax denominator and the numerator of
// the output are both unchanged for that query. Everything is computed in double from logits
// and log-votes (never raw exponentials), so logits of 80 or more do not overflow.
//
// The rescale f is unstable: it is negative when L and D differ in sign, explodes when D is
// near zero, and, measured on a small trained model, was negative for 11.5% of merges and
// outside [0.5, 2] for 29%, which made every later step far worse. When f is not usable the
// rule falls back to the weighted mean of the keys (f = 1) and, by default, moves the
// difference L - D into the log-vote so that p_r exp(D) = W still holds at the merge step.
// L = D - KL(w/W || p/P) <= D (Gibbs), so f <= 1 when D > 0 and f >= 1 when D < 0, and the
// fallback's log-vote ln P + (L - D) never exceeds ln(p_e + p_c).
//
// GQA: one KV entry serves G query heads. The score of an entry is then the sum of exp(logit)
// over the G heads (ln s = logsumexp of the G logits); the merge is exact for G = 1 only, and
// for G > 1 each head's output is perturbed. Fitting all G heads at once is separate work.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kvd::cache_store {

// One entry of a (layer, kv head), borrowed for the duration of the call.
struct MergeInput {
  std::span<const float> key;    // [head_dim], after RoPE
  std::span<const float> value;  // [head_dim]
  float log_vote = 0.0f;         // ln p; 0 for an unmerged token
  // [G] merge-step logits q_h.k / sqrt(head_dim) of each query head h of the GQA group, WITHOUT
  // the log-vote. G = 1 without GQA. Both entries of a merge must give the same G.
  std::span<const float> logits;
};

struct ZipMergeOptions {
  // Smallest usable key rescale f. Below it (and f <= 0 always) the weighted mean is used.
  // Default 0.5: a merged key at under half its mean length loses most of its future attention.
  double min_key_scale = 0.5;
  // Largest usable key rescale f. Default 2.0: the bound outside which 29% of measured merges
  // fell and later decode steps degraded the most.
  double max_key_scale = 2.0;
  // |D| (nats) below which D counts as zero: f = L / D is then cancellation noise even when it
  // happens to land in bounds. Default 1e-3.
  double min_abs_denominator = 1e-3;
  // On fallback, set ln p_r = ln W - D (the merge step stays exact) instead of adding votes
  // (ln p_r = ln(p_e + p_c), which changes the softmax denominator). Default true.
  bool preserve_denominator_on_fallback = true;

  absl::Status Validate() const;
};

enum class MergeRule : uint8_t {
  kZip,           // the exact rule: weighted-mean key rescaled by f
  kWeightedMean,  // fallback: weighted-mean key, no rescale
  kGqaFit,        // GqaFitMerge's rule: weighted-mean key plus the min-norm correction
};

// Why the fallback was taken; kNone with kZip and kGqaFit.
enum class FallbackReason : uint8_t {
  kNone,
  kNearZeroDenominator,  // |D| < min_abs_denominator
  kNegativeScale,        // f <= 0: L and D differ in sign (or L = 0)
  kScaleOutOfBounds,     // f outside [min_key_scale, max_key_scale]
  kCorrectionTooLarge,   // GqaFitMerge: ||correction|| > max_relative_correction * ||mean key||
};

struct MergedEntry {
  std::vector<float> key;    // [head_dim]
  std::vector<float> value;  // [head_dim]
  float log_vote = 0.0f;     // ln p_r
  MergeRule rule = MergeRule::kZip;
  FallbackReason fallback = FallbackReason::kNone;
  // f = L / D as computed, whether or not it was used (0 when D counted as zero); for
  // measuring how often the exact rule is usable.
  double key_scale = 0.0;
  // The logit the merged entry needs (L) and, with G = 1, gets under the merge-step query.
  double target_logit = 0.0;
};

// Merges `evicted` into `kept` (the result replaces both). InvalidArgument when head_dim or G
// differ or are zero, or an input is not finite, or the options are invalid.
[[nodiscard]] absl::StatusOr<MergedEntry> ZipMerge(const MergeInput& evicted,
                                                   const MergeInput& kept,
                                                   const ZipMergeOptions& options = {});

}  // namespace kvd::cache_store
