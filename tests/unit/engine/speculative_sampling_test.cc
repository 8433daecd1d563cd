// Speculative sampling's rule: the token that comes out of a draft drawn from q and the
// accept-or-resample step follows the target distribution p, checked by a chi-square test whose
// bound and power are worked out below; and the rule's exact cases.
#include "engine/speculative_sampling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "engine/sampling.h"

namespace kvd::engine {
namespace {

// The chi-square distribution with 5 degrees of freedom exceeds this with probability 1e-6, so
// a correct rule fails the test for under one seed in a million (the seed is fixed, so the test
// is deterministic; the bound is what makes it hold for any seed).
constexpr double kChiSquare5At1e6 = 35.89;

struct Pair {
  std::vector<float> p;  // target
  std::vector<float> q;  // draft
};

// Far apart: q puts most of its mass where p puts little, so the resample carries 40% of p.
Pair FarApart() {
  return {{0.40f, 0.25f, 0.15f, 0.10f, 0.06f, 0.04f}, {0.10f, 0.30f, 0.05f, 0.35f, 0.15f, 0.05f}};
}

double ChiSquare(const std::vector<int64_t>& counts, const std::vector<double>& expected_probs,
                 int64_t n) {
  double statistic = 0.0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double expected = expected_probs[i] * static_cast<double>(n);
    statistic += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  return statistic;
}

double Uniform(std::mt19937_64& random) {
  return static_cast<double>(random() >> 11) * (1.0 / 9007199254740992.0);
}

TEST(SpeculativeSamplingTest, OutputFollowsTheTargetDistribution) {
  const Pair pair = FarApart();
  const std::vector<double> p(pair.p.begin(), pair.p.end());
  constexpr int64_t kDraws = 200000;
  std::mt19937_64 random(7);
  std::vector<int64_t> counts(p.size(), 0);
  int64_t accepted = 0;
  for (int64_t i = 0; i < kDraws; ++i) {
    const int32_t draft = DrawFromDistribution(pair.q, Uniform(random));
    const int32_t token = AcceptOrResample(pair.p, pair.q, draft, [&] { return Uniform(random); });
    ++counts[token];
    accepted += token == draft;
  }
  EXPECT_LT(ChiSquare(counts, p, kDraws), kChiSquare5At1e6);

  // The test's power: the expected statistic of the two likeliest wrong rules (a refusal
  // resampled from p instead of the residual; every draft kept) is its noncentrality
  // n * sum((r_i - p_i)^2 / p_i), thousands of times the bound, so either fails the test.
  double kept_mass = 0.0;
  for (size_t i = 0; i < p.size(); ++i) kept_mass += std::min(pair.p[i], pair.q[i]);
  auto noncentrality = [&](auto&& wrong) {
    double sum = 0.0;
    for (size_t i = 0; i < p.size(); ++i) sum += (wrong(i) - p[i]) * (wrong(i) - p[i]) / p[i];
    return sum * kDraws;
  };
  EXPECT_GT(noncentrality([&](size_t i) {
              return std::min(pair.p[i], pair.q[i]) + (1.0 - kept_mass) * p[i];
            }),
            100 * kChiSquare5At1e6);
  EXPECT_GT(noncentrality([&](size_t i) { return double{pair.q[i]}; }), 100 * kChiSquare5At1e6);

  // Drafts are kept at the rate sum_i min(p_i, q_i) (0.6 here): 4.5 standard deviations apart.
  const double rate = static_cast<double>(accepted) / kDraws;
  EXPECT_NEAR(rate, kept_mass, 4.5 * std::sqrt(kept_mass * (1 - kept_mass) / kDraws));
}

TEST(SpeculativeSamplingTest, ADraftFromTheTargetItselfIsAlwaysKept) {
  const Pair pair = FarApart();
  std::mt19937_64 random(3);
  for (int i = 0; i < 1000; ++i) {
    const int32_t draft = DrawFromDistribution(pair.p, Uniform(random));
    EXPECT_EQ(AcceptOrResample(pair.p, pair.p, draft, [&] { return Uniform(random); }), draft);
  }
}

TEST(SpeculativeSamplingTest, AGreedyTargetKeepsOnlyItsChoice) {
  const std::vector<float> greedy = {0.0f, 0.0f, 1.0f, 0.0f};
  const std::vector<float> q = {0.4f, 0.3f, 0.2f, 0.1f};
  std::mt19937_64 random(5);
  for (int32_t draft = 0; draft < 4; ++draft) {
    for (int i = 0; i < 100; ++i) {
      EXPECT_EQ(AcceptOrResample(greedy, q, draft, [&] { return Uniform(random); }), 2);
    }
  }
}

TEST(SpeculativeSamplingTest, ARefusedDraftIsNeverTheReplacement) {
  // Where q exceeds p the draft may be refused, and the residual there is zero.
  const Pair pair = FarApart();
  std::mt19937_64 random(11);
  for (int i = 0; i < 10000; ++i) {
    const int32_t draft = 3;  // q 0.35 > p 0.10: kept 2 times in 7
    double first = -1.0;
    const int32_t token = AcceptOrResample(pair.p, pair.q, draft, [&] {
      const double u = Uniform(random);
      if (first < 0.0) first = u;
      return u;
    });
    EXPECT_EQ(token == draft, first * pair.q[draft] < pair.p[draft]);
  }
}

// A draft model's row that overflowed gives its draft no finite probability: no proposal, and
// the token is drawn from the target alone.
TEST(SpeculativeSamplingTest, ADraftWithoutAFiniteProbabilityIsDrawnFromTheTarget) {
  const std::vector<float> target = {0.0f, 0.0f, 1.0f, 0.0f};
  for (const float broken : {std::nanf(""), 0.0f, -1.0f, INFINITY}) {
    const std::vector<float> q = {broken, 0.5f, 0.25f, 0.25f};
    std::mt19937_64 random(9);
    EXPECT_EQ(AcceptOrResample(target, q, 0, [&] { return Uniform(random); }), 2) << broken;
  }
}

TEST(SpeculativeSamplingTest, DrawFromDistributionSkipsZeroWeights) {
  const std::vector<float> weights = {0.0f, 0.5f, 0.0f, 0.5f, 0.0f};
  EXPECT_EQ(DrawFromDistribution(weights, 0.0), 1);
  EXPECT_EQ(DrawFromDistribution(weights, 0.49), 1);
  EXPECT_EQ(DrawFromDistribution(weights, 0.5), 3);
  EXPECT_EQ(DrawFromDistribution(weights, 1.5), 3);  // past the sum: the last possible token
}

TEST(SamplerProbabilitiesTest, AreWhatTheDrawTakesFrom) {
  const std::vector<float> logits = {2.0f, 1.0f, 0.5f, -1.0f, 3.0f};
  Sampler top_two({.temperature = 0.5f, .top_k = 2}, 1);
  const std::vector<float> probs = top_two.Probabilities(logits, {}, 0);
  ASSERT_EQ(probs.size(), logits.size());
  EXPECT_EQ(std::count_if(probs.begin(), probs.end(), [](float p) { return p > 0.0f; }), 2);
  EXPECT_NEAR(probs[4] / probs[0], std::exp((3.0 - 2.0) / 0.5), 1e-4);
  EXPECT_NEAR(probs[4] + probs[0], 1.0, 1e-6);

  Sampler greedy({.temperature = 0.0f}, 1);
  const std::vector<float> one_hot = greedy.Probabilities(logits, {}, 0, /*banned=*/{{4}});
  EXPECT_EQ(one_hot, (std::vector<float>{1.0f, 0.0f, 0.0f, 0.0f, 0.0f}));

  // The nucleus of 0.9 at temperature 1 holds the three likeliest tokens (0.62, 0.23, 0.08).
  Sampler nucleus({.temperature = 1.0f, .top_p = 0.9f}, 1);
  const std::vector<float> kept = nucleus.Probabilities(logits, {}, 0);
  EXPECT_EQ(kept[2], 0.0f);
  EXPECT_EQ(kept[3], 0.0f);
  EXPECT_NEAR(kept[4] + kept[0] + kept[1], 1.0, 1e-6);
  EXPECT_NEAR(kept[4] / kept[1], std::exp(2.0), 1e-4);
}

}  // namespace
}  // namespace kvd::engine
