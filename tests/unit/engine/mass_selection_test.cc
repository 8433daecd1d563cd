// SelectByMass: the candidate a walk most likely first stops at, found without sorting, is the
// one sorting and walking finds, and the candidates before it are exactly the more likely ones.
#include "engine/mass_selection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace kvd::engine {
namespace {

// Sorts and walks: the id the walk stops at.
int32_t WalkSorted(std::vector<Candidate> candidates, double target, bool inclusive) {
  std::sort(candidates.begin(), candidates.end(), MoreLikely);
  for (const Candidate& candidate : candidates) {
    target -= candidate.probability;
    if (inclusive ? target <= 0.0 : target < 0.0) return candidate.id;
  }
  return candidates.back().id;
}

// `count` candidates with logits from `levels` distinct values (ties broken by id), their
// probabilities normalized; arranged as `arrangement` says (0 random, 1 ascending, 2
// descending by likelihood).
std::vector<Candidate> Candidates(std::mt19937& random, int count, int levels, int arrangement) {
  std::vector<Candidate> candidates;
  std::uniform_int_distribution<int> level(0, levels - 1);
  double total = 0.0;
  for (int id = 0; id < count; ++id) {
    const float logit = static_cast<float>(level(random)) * 0.37f;
    candidates.push_back({logit, id, std::exp(static_cast<double>(logit))});
    total += candidates.back().probability;
  }
  for (Candidate& candidate : candidates) candidate.probability /= total;
  if (arrangement == 1) std::sort(candidates.rbegin(), candidates.rend(), MoreLikely);
  if (arrangement == 2) std::sort(candidates.begin(), candidates.end(), MoreLikely);
  if (arrangement == 0) std::shuffle(candidates.begin(), candidates.end(), random);
  return candidates;
}

TEST(MassSelectionTest, StopsWhereTheSortedWalkStopsWithTheMoreLikelyBeforeIt) {
  std::mt19937 random(17);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  int checked = 0;
  for (int count : {1, 2, 3, 31, 33, 100, 1000, 20000}) {
    for (int levels : {1, 3, 50, 100000}) {
      for (int arrangement : {0, 1, 2}) {
        for (bool inclusive : {false, true}) {
          for (int trial = 0; trial < 4; ++trial) {
            std::vector<Candidate> candidates = Candidates(random, count, levels, arrangement);
            // Targets inside the mass, at its ends, and past it.
            const double target = trial == 0 ? 0.0 : trial == 3 ? 1.5 : uniform(random);
            const int32_t expected = WalkSorted(candidates, target, inclusive);
            const size_t at = SelectByMass(candidates, target, inclusive);
            ASSERT_LT(at, candidates.size());
            EXPECT_EQ(candidates[at].id, expected)
                << count << " candidates, " << levels << " levels, target " << target;
            for (size_t i = 0; i < candidates.size(); ++i) {
              if (i == at) continue;
              ASSERT_EQ(MoreLikely(candidates[i], candidates[at]), i < at)
                  << "candidate " << i << " is on the wrong side of " << at;
            }
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 8 * 4 * 3 * 2 * 4);
}

}  // namespace
}  // namespace kvd::engine
