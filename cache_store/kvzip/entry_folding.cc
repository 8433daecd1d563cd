#include "cache_store/kvzip/entry_folding.h"

#include <cmath>
#include <span>

#include "base/check.h"

namespace kvd::cache_store {
namespace {

double Dot(std::span<const float> a, std::span<const float> b) {
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) sum += static_cast<double>(a[i]) * b[i];
  return sum;
}

}  // namespace

HeadKv FoldDroppedEntries(const HeadKv& head, const std::vector<bool>& keep, int32_t prefix,
                          int32_t head_dim) {
  KVD_CHECK(keep.size() == head.positions.size());
  const auto dim = static_cast<size_t>(head_dim);
  const auto key = [&](size_t i) { return std::span(head.keys).subspan(i * dim, dim); };
  const auto value = [&](size_t i) { return std::span(head.values).subspan(i * dim, dim); };
  // Attention mass m = score * p of held entry i; 0 for the prefix and unusable scores.
  const auto mass = [&](size_t i) {
    const int32_t position = head.positions[i];
    const float score = head.scores[position];
    if (position < prefix || !std::isfinite(score) || score <= 0.0f) return 0.0;
    return static_cast<double>(score) * std::exp(static_cast<double>(head.log_votes[i]));
  };

  std::vector<size_t> targets;
  std::vector<double> norms(head.positions.size(), 0.0);
  for (size_t i = 0; i < head.positions.size(); ++i) {
    norms[i] = std::sqrt(Dot(key(i), key(i)));
    if (keep[i] && mass(i) > 0.0 && norms[i] > 0.0) targets.push_back(i);
  }
  // Per target: the mass folded in and its mass-weighted sums of keys and values.
  std::vector<double> folded_mass(head.positions.size(), 0.0);
  std::vector<double> key_sums(head.positions.size() * dim, 0.0);
  std::vector<double> value_sums(head.positions.size() * dim, 0.0);
  for (size_t e = 0; e < head.positions.size(); ++e) {
    const double m = keep[e] ? 0.0 : mass(e);
    if (m <= 0.0 || norms[e] <= 0.0) continue;
    size_t best = 0;
    double best_cosine = -2.0;
    for (size_t t : targets) {
      const double cosine = Dot(key(e), key(t)) / (norms[e] * norms[t]);
      if (cosine > best_cosine) {
        best_cosine = cosine;
        best = t;
      }
    }
    if (best_cosine < kMinFoldCosine) continue;
    folded_mass[best] += m;
    for (size_t d = 0; d < dim; ++d) {
      key_sums[best * dim + d] += m * key(e)[d];
      value_sums[best * dim + d] += m * value(e)[d];
    }
  }

  HeadKv cut;
  cut.scores = head.scores;
  for (size_t i = 0; i < head.positions.size(); ++i) {
    if (!keep[i]) continue;
    cut.positions.push_back(head.positions[i]);
    if (folded_mass[i] == 0.0) {
      cut.keys.insert(cut.keys.end(), key(i).begin(), key(i).end());
      cut.values.insert(cut.values.end(), value(i).begin(), value(i).end());
      cut.log_votes.push_back(head.log_votes[i]);
      continue;
    }
    const double own = mass(i);
    const double total = own + folded_mass[i];
    for (size_t d = 0; d < dim; ++d) {
      cut.keys.push_back(static_cast<float>((own * key(i)[d] + key_sums[i * dim + d]) / total));
      cut.values.push_back(
          static_cast<float>((own * value(i)[d] + value_sums[i * dim + d]) / total));
    }
    cut.log_votes.push_back(static_cast<float>(head.log_votes[i] + std::log(total / own)));
  }
  return cut;
}

}  // namespace kvd::cache_store
