#include "cache_store/keepkv/gqa_fit.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "cache_store/keepkv/merge_math.h"

namespace kvd::cache_store {
namespace {

absl::Status CheckQueries(std::span<const float> queries, float scale,
                          std::span<const float> query_weights, size_t m, size_t head_dim) {
  if (queries.size() != m * head_dim) {
    return absl::InvalidArgumentError("queries must hold one head_dim row per logit");
  }
  if (!AllFinite(queries) || !(scale > 0.0f) || !std::isfinite(scale)) {
    return absl::InvalidArgumentError("queries must be finite and the scale finite and > 0");
  }
  if (query_weights.empty()) return absl::OkStatus();
  if (query_weights.size() != m || !AllFinite(query_weights) ||
      std::any_of(query_weights.begin(), query_weights.end(), [](float x) { return x < 0; }) ||
      std::all_of(query_weights.begin(), query_weights.end(), [](float x) { return x == 0; })) {
    return absl::InvalidArgumentError("query_weights must be m finite values >= 0, not all 0");
  }
  return absl::OkStatus();
}

// Solves a x = rhs for a symmetric positive definite `a` (n x n, row-major) by Cholesky, in
// place: `x` holds rhs on entry. A matrix that is not positive definite yields NaN, which the
// caller's norm guard rejects.
void CholeskySolve(std::vector<double>& a, std::vector<double>& x, size_t n) {
  for (size_t j = 0; j < n; ++j) {
    double diag = a[j * n + j];
    for (size_t k = 0; k < j; ++k) diag -= a[j * n + k] * a[j * n + k];
    a[j * n + j] = std::sqrt(diag);
    for (size_t i = j + 1; i < n; ++i) {
      double sum = a[i * n + j];
      for (size_t k = 0; k < j; ++k) sum -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = sum / a[j * n + j];
    }
  }
  for (size_t i = 0; i < n; ++i) {  // L y = rhs
    for (size_t k = 0; k < i; ++k) x[i] -= a[i * n + k] * x[k];
    x[i] /= a[i * n + i];
  }
  for (size_t i = n; i-- > 0;) {  // L^T x = y
    for (size_t k = i + 1; k < n; ++k) x[i] -= a[k * n + i] * x[k];
    x[i] /= a[i * n + i];
  }
}

// The key correction δ minimising sum_j (scale q_j . δ - r_j)^2 + λ ||δ||^2, λ = ridge times the
// mean eigenvalue of the Gram matrix. With rows u_j = scale q_j, δ = U^T (U U^T + λI)^-1 r
// (m x m) = (U^T U + λI)^-1 U^T r (head_dim x head_dim): the smaller system is solved.
std::vector<double> KeyCorrection(std::span<const float> queries, double scale,
                                  const std::vector<double>& residual, double ridge) {
  const size_t m = residual.size();
  const size_t d = queries.size() / m;
  std::vector<double> u(m * d);
  double trace = 0.0;
  for (size_t k = 0; k < m * d; ++k) {
    u[k] = scale * queries[k];
    trace += u[k] * u[k];
  }
  const size_t n = std::min(m, d);
  // The floor keeps the system positive definite when every query is zero.
  const double lambda = ridge * trace / static_cast<double>(n) + std::numeric_limits<double>::min();
  std::vector<double> a(n * n, 0.0), x(n, 0.0), delta(d, 0.0);
  if (m <= d) {
    for (size_t j = 0; j < m; ++j) {
      for (size_t k = 0; k < m; ++k) {
        for (size_t i = 0; i < d; ++i) a[j * m + k] += u[j * d + i] * u[k * d + i];
      }
      a[j * m + j] += lambda;
    }
    x = residual;
    CholeskySolve(a, x, n);
    for (size_t j = 0; j < m; ++j) {
      for (size_t i = 0; i < d; ++i) delta[i] += x[j] * u[j * d + i];
    }
  } else {
    for (size_t j = 0; j < m; ++j) {
      for (size_t i = 0; i < d; ++i) {
        for (size_t k = 0; k < d; ++k) a[i * d + k] += u[j * d + i] * u[j * d + k];
        x[i] += u[j * d + i] * residual[j];
      }
    }
    for (size_t i = 0; i < d; ++i) a[i * d + i] += lambda;
    CholeskySolve(a, x, n);
    delta = x;
  }
  return delta;
}

double WeightedMean(const std::vector<double>& xs, const std::vector<double>& weights) {
  double sum = 0.0, weight_sum = 0.0;
  for (size_t j = 0; j < xs.size(); ++j) {
    sum += weights[j] * xs[j];
    weight_sum += weights[j];
  }
  return sum / weight_sum;
}

double Norm(const std::vector<double>& xs) {
  double sum = 0.0;
  for (double x : xs) sum += x * x;
  return std::sqrt(sum);
}

}  // namespace

absl::Status GqaFitOptions::Validate() const {
  if (!(ridge > 0.0) || !(ridge <= 1.0)) {
    return absl::InvalidArgumentError("ridge must be in (0, 1]");
  }
  if (!(max_relative_correction >= 0.0) || !std::isfinite(max_relative_correction)) {
    return absl::InvalidArgumentError("max_relative_correction must be finite and >= 0");
  }
  return absl::OkStatus();
}

absl::StatusOr<MergedEntry> GqaFitMerge(const MergeInput& evicted, const MergeInput& kept,
                                        std::span<const float> queries, float scale,
                                        std::span<const float> query_weights,
                                        const GqaFitOptions& options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  if (absl::Status s = CheckMergePair(evicted, kept); !s.ok()) return s;
  const size_t head_dim = kept.key.size();
  const size_t m = kept.logits.size();
  if (absl::Status s = CheckQueries(queries, scale, query_weights, m, head_dim); !s.ok()) {
    return s;
  }
  // In the log domain: ln W_j, the target logit L_j = ln(W_j / P) and α_j = w_ej / W_j of every
  // query; the least-squares weights β_j = ω_j W_j / max_k W_k (over the queries with ω_k > 0,
  // so that one β is ω_k itself and the sum never underflows).
  const double log_p_sum = LogAddExp(evicted.log_vote, kept.log_vote);
  std::vector<double> log_w(m), alpha(m), target(m), beta(m, 1.0);
  if (!query_weights.empty()) beta.assign(query_weights.begin(), query_weights.end());
  double max_log_w = -std::numeric_limits<double>::infinity();
  for (size_t j = 0; j < m; ++j) {
    const double log_w_e = evicted.log_vote + evicted.logits[j];
    log_w[j] = LogAddExp(log_w_e, kept.log_vote + kept.logits[j]);
    alpha[j] = std::exp(log_w_e - log_w[j]);
    target[j] = log_w[j] - log_p_sum;
    if (beta[j] > 0.0) max_log_w = std::max(max_log_w, log_w[j]);
  }
  for (size_t j = 0; j < m; ++j) beta[j] *= std::exp(log_w[j] - max_log_w);

  // One mix a = sum_j β_j α_j / sum_j β_j = sum_j ω_j w_ej / sum_j ω_j W_j for key and value.
  const double share_e = WeightedMean(alpha, beta);
  std::vector<double> mean_key(head_dim);
  for (size_t i = 0; i < head_dim; ++i) {
    mean_key[i] = share_e * evicted.key[i] + (1.0 - share_e) * kept.key[i];
  }
  // The mean key's logit is linear in the key: scale q_j . k̄ = a l_ej + (1 - a) l_cj.
  std::vector<double> residual(m);
  for (size_t j = 0; j < m; ++j) {
    residual[j] = target[j] - (share_e * evicted.logits[j] + (1.0 - share_e) * kept.logits[j]);
  }

  std::vector<double> delta = KeyCorrection(queries, scale, residual, options.ridge);
  const bool fit = Norm(delta) <= options.max_relative_correction * Norm(mean_key);
  if (fit) {
    for (size_t j = 0; j < m; ++j) {
      double logit = 0.0;
      for (size_t i = 0; i < head_dim; ++i) logit += queries[j * head_dim + i] * delta[i];
      residual[j] -= scale * logit;
    }
  } else {
    std::fill(delta.begin(), delta.end(), 0.0);
  }

  MergedEntry out;
  out.rule = fit ? MergeRule::kGqaFit : MergeRule::kWeightedMean;
  out.fallback = fit ? FallbackReason::kNone : FallbackReason::kCorrectionTooLarge;
  out.key.resize(head_dim);
  out.value.resize(head_dim);
  for (size_t i = 0; i < head_dim; ++i) {
    out.key[i] = static_cast<float>(mean_key[i] + delta[i]);
    out.value[i] = static_cast<float>(share_e * evicted.value[i] + (1.0 - share_e) * kept.value[i]);
  }
  // The logit errors the key leaves, moved into the vote as one least-squares offset.
  out.log_vote = static_cast<float>(log_p_sum + WeightedMean(residual, beta));
  return out;
}

}  // namespace kvd::cache_store
