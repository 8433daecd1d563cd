#include "cache_store/kvzip/entry_folding.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include "base/check.h"

namespace kvd::cache_store {
namespace {

double Dot(std::span<const float> a, std::span<const float> b) {
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) sum += static_cast<double>(a[i]) * b[i];
  return sum;
}

constexpr double kNoMass = -std::numeric_limits<double>::infinity();

}  // namespace

HeadKv FoldDroppedEntries(const HeadKv& head, const std::vector<bool>& keep, int32_t prefix,
                          int32_t head_dim) {
  KVD_CHECK(keep.size() == head.positions.size());
  const size_t held = head.positions.size();
  const auto dim = static_cast<size_t>(head_dim);
  const auto key = [&](size_t i) { return std::span(head.keys).subspan(i * dim, dim); };
  const auto value = [&](size_t i) { return std::span(head.values).subspan(i * dim, dim); };
  // ln m = ln score + ln p of held entry i; kNoMass for the prefix and unusable scores.
  std::vector<double> log_mass(held, kNoMass);
  std::vector<double> norms(held, 0.0);
  std::vector<size_t> targets;  // ascending position
  for (size_t i = 0; i < held; ++i) {
    const float score = head.scores[head.positions[i]];
    norms[i] = std::sqrt(Dot(key(i), key(i)));
    if (head.positions[i] < prefix || !(score > 0.0f) || !std::isfinite(score)) continue;
    log_mass[i] = std::log(static_cast<double>(score)) + head.log_votes[i];
    if (keep[i] && norms[i] > 0.0) targets.push_back(i);
  }

  // Each dropped entry's target (held index), or held when it folds nowhere.
  std::vector<size_t> target_of(held, held);
  for (size_t e = 0; e < held; ++e) {
    if (keep[e] || log_mass[e] == kNoMass || norms[e] == 0.0) continue;
    const auto after = std::lower_bound(targets.begin(), targets.end(), e);
    const auto first = after - std::min<ptrdiff_t>(kFoldCandidatesPerSide, after - targets.begin());
    const auto last = after + std::min<ptrdiff_t>(kFoldCandidatesPerSide, targets.end() - after);
    double best_cosine = kMinFoldCosine;
    for (auto t = first; t != last; ++t) {
      const double cosine = Dot(key(e), key(*t)) / (norms[e] * norms[*t]);
      if (cosine >= best_cosine) {
        best_cosine = cosine;
        target_of[e] = *t;
      }
    }
  }
  // Per target, the largest log mass of itself and its folds, so every weight is at most 1.
  std::vector<double> top = log_mass;
  for (size_t e = 0; e < held; ++e) {
    if (target_of[e] != held) top[target_of[e]] = std::max(top[target_of[e]], log_mass[e]);
  }
  std::vector<double> weights(held, 0.0);  // sum of exp(ln m - top), the target's own included
  std::vector<double> key_sums(held * dim, 0.0);
  std::vector<double> value_sums(held * dim, 0.0);
  const auto add = [&](size_t into, size_t from) {
    const double w = std::exp(log_mass[from] - top[into]);
    weights[into] += w;
    for (size_t d = 0; d < dim; ++d) {
      key_sums[into * dim + d] += w * key(from)[d];
      value_sums[into * dim + d] += w * value(from)[d];
    }
  };
  std::vector<bool> folded_into(held, false);
  for (size_t e = 0; e < held; ++e) {
    if (target_of[e] == held) continue;
    if (!folded_into[target_of[e]]) add(target_of[e], target_of[e]);
    folded_into[target_of[e]] = true;
    add(target_of[e], e);
  }

  HeadKv cut;
  cut.scores = head.scores;
  for (size_t i = 0; i < held; ++i) {
    if (!keep[i]) continue;
    cut.positions.push_back(head.positions[i]);
    // ln p' = ln p + ln(M / m) = ln(sum of weights) + top - ln score.
    const double log_vote = folded_into[i]
                                ? std::log(weights[i]) + top[i] -
                                      std::log(static_cast<double>(head.scores[head.positions[i]]))
                                : 0.0;
    if (!folded_into[i] || !(std::abs(log_vote) <= std::numeric_limits<float>::max())) {
      cut.keys.insert(cut.keys.end(), key(i).begin(), key(i).end());
      cut.values.insert(cut.values.end(), value(i).begin(), value(i).end());
      cut.log_votes.push_back(head.log_votes[i]);
      continue;
    }
    for (size_t d = 0; d < dim; ++d) {
      cut.keys.push_back(static_cast<float>(key_sums[i * dim + d] / weights[i]));
      cut.values.push_back(static_cast<float>(value_sums[i * dim + d] / weights[i]));
    }
    cut.log_votes.push_back(static_cast<float>(log_vote));
  }
  return cut;
}

}  // namespace kvd::cache_store
