#include "engine/speculative_sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "base/check.h"

namespace kvd::engine {

int32_t DrawFromDistribution(std::span<const float> probabilities, double point) {
  KVD_CHECK(!probabilities.empty());
  double target = point;
  int32_t last_possible = 0;
  for (size_t i = 0; i < probabilities.size(); ++i) {
    if (probabilities[i] <= 0.0f) continue;
    last_possible = static_cast<int32_t>(i);
    target -= probabilities[i];
    if (target < 0.0) return last_possible;
  }
  return last_possible;
}

int32_t AcceptOrResample(std::span<const float> target, std::span<const float> draft_probabilities,
                         int32_t draft, absl::FunctionRef<double()> uniform) {
  KVD_CHECK(target.size() == draft_probabilities.size());
  KVD_CHECK(draft >= 0 && static_cast<size_t>(draft) < target.size());
  const double p = target[draft];
  const double q = draft_probabilities[draft];
  // A draft its own distribution gives no finite, positive probability (a draft model's row
  // that overflowed) proposes nothing: the token is drawn from p alone.
  if (!(q > 0.0) || !std::isfinite(q)) {
    return DrawFromDistribution(target,
                                uniform() * std::accumulate(target.begin(), target.end(), 0.0));
  }
  // Kept with probability min(1, p / q): u < p / q without a division.
  if (uniform() * q < p) return draft;
  std::vector<float> residual(target.size());
  double total = 0.0;
  for (size_t i = 0; i < target.size(); ++i) {
    residual[i] = std::max(0.0f, target[i] - draft_probabilities[i]);
    total += residual[i];
  }
  // p and q equal up to rounding (a refusal of probability ~0): p itself is the residual's limit.
  if (total <= 0.0) {
    return DrawFromDistribution(target,
                                uniform() * std::accumulate(target.begin(), target.end(), 0.0));
  }
  return DrawFromDistribution(residual, uniform() * total);
}

}  // namespace kvd::engine
