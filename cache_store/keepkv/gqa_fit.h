// KeepKV's merge rule under GQA: folds one KV entry into another of the same (layer, kv head)
// so that the softmax denominator of every one of the m queries it serves (G query heads times
// the scored rows) is unchanged at the merge step, and the outputs move as little as one value
// allows. Pure math on host vectors; the derivation is in docs/keepkv.md, "Merging under GQA".
//
// With logits l_ij = scale * q_j . k_i (no log-vote), w_ij = p_i exp(l_ij), W_j = w_ej + w_cj
// and P = p_e + p_c, the merged entry (vote P) needs the logit L_j = ln(W_j / P) under query j.
// With query weights ω_j (1 by default) and β_j = ω_j W_j:
//   a   = sum_j β_j α_j / sum_j β_j, α_j = w_ej / W_j   (with equal ω, ZipMerge's group weight)
//   k̄   = a k_e + (1 - a) k_c,  v_r = a v_e + (1 - a) v_c
//   k_r = k̄ + δ, δ the smallest correction with scale * q_j . δ = L_j - scale * q_j . k̄ for
//         every j (ridge least squares; exact for m <= head_dim independent queries, so that
//         every query's softmax denominator is kept, whatever its weight)
//   ln p_r = ln P + b, b the β-weighted mean of the logit errors the key leaves (0 when exact)
// With the key exact, query j's output moves by a_j (a - α_j)(v_e - v_c), a_j = W_j / Z_j the
// pair's share of its attention; a is the least-squares choice with weights β_j standing in for
// a_j^2, which the merge does not see (Z_j is the whole head's denominator). β_j = W_j keeps the
// summed numerator of the group exact and measured robust (docs/keepkv.md); a caller that knows
// the shares passes ω_j = a_j^2 / (W_j / max_k W_k), divided by ||o_j||^2 for relative errors.
//
// A correction longer than max_relative_correction * ||k̄|| (dissimilar pairs, queries that
// disagree, a solve that is not finite) is not used: the key is k̄ and b, the β-weighted mean
// of L_j - scale * q_j . k̄, keeps the denominators as well as one vote can (least squares over
// the queries), as ZipMerge's fallback does for one query. Everything is in double from logits
// and log-votes (never raw exponentials of logits), so logits of 80 or more do not overflow.
#pragma once

#include <span>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cache_store/keepkv/zip_merge.h"

namespace kvd::cache_store {

struct GqaFitOptions {
  // Ridge λ of the key fit, relative to the mean eigenvalue of the queries' Gram matrix
  // scale^2 Q Q^T. Keeps the solve finite for repeated or dependent queries while
  // independent ones are still fit to ~1e-7 of their logit error. Default 1e-7.
  double ridge = 1e-7;
  // Largest usable ||δ|| / ||k̄||. Default 0.5: the correction may move the key at most as far
  // as ZipMerge's smallest usable rescale (0.5) does, and ZipMerge's rescale is never shorter
  // than the min-norm correction for the same query. Past it the fallback is taken.
  double max_relative_correction = 0.5;

  absl::Status Validate() const;
};

// Merges `evicted` into `kept` (the result replaces both) for the m query vectors `queries`
// ([m, head_dim] row-major, after RoPE), whose logits scale * q_j . k (WITHOUT the log-vote)
// are evicted.logits[j] and kept.logits[j], both of size m. `query_weights` ([m], >= 0, not
// all 0; empty = all 1) says how much each query's output matters (see above).
//
// The result's rule is kGqaFit (votes add: ln p_r = ln(p_e + p_c), up to the ridge's residual
// when the queries are independent) or kWeightedMean with fallback kCorrectionTooLarge;
// key_scale and target_logit are ZipMerge's and stay 0. InvalidArgument when head_dim or m
// differ between the inputs or are zero, an input is not finite, or the options are invalid.
// Cost: O(m * head_dim * min(m, head_dim) + min(m, head_dim)^3).
[[nodiscard]] absl::StatusOr<MergedEntry> GqaFitMerge(const MergeInput& evicted,
                                                      const MergeInput& kept,
                                                      std::span<const float> queries, float scale,
                                                      std::span<const float> query_weights,
                                                      const GqaFitOptions& options = {});

}  // namespace kvd::cache_store
