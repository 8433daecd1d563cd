#include "engine/sampling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace kvd::engine {
namespace {

const std::vector<float> kLogits = {1.0f, 3.0f, 2.0f, 0.5f, 2.9f};

TEST(SamplingTest, GreedyTakesArgMax) {
  Sampler sampler({.temperature = 0.0f}, 1);
  EXPECT_EQ(sampler.Sample(kLogits, {}, 0).token, 1);
}

TEST(SamplingTest, SeedMakesSamplingReproducible) {
  SamplingParams params{.temperature = 1.0f};
  params.seed = 42;
  Sampler a(params, 1), b(params, 2);
  std::vector<int32_t> first, second;
  for (int i = 0; i < 50; ++i) {
    first.push_back(a.Sample(kLogits, {}, 0).token);
    second.push_back(b.Sample(kLogits, {}, 0).token);
  }
  EXPECT_EQ(first, second);
  EXPECT_GT(std::set<int32_t>(first.begin(), first.end()).size(), 1u);
}

TEST(SamplingTest, FrequenciesFollowTheSoftmax) {
  Sampler sampler({.temperature = 1.0f}, 7);
  std::map<int32_t, int> counts;
  constexpr int kDraws = 20000;
  for (int i = 0; i < kDraws; ++i) ++counts[sampler.Sample(kLogits, {}, 0).token];
  double total = 0.0;
  for (float logit : kLogits) total += std::exp(logit);
  for (int32_t token = 0; token < 5; ++token) {
    const double expected = std::exp(kLogits[token]) / total;
    EXPECT_NEAR(counts[token] / double{kDraws}, expected, 0.02) << token;
  }
}

TEST(SamplingTest, TopKTopPAndMinPRestrictTheCandidates) {
  auto candidates = [](SamplingParams params) {
    params.temperature = 1.0f;
    Sampler sampler(params, 3);
    std::set<int32_t> seen;
    for (int i = 0; i < 2000; ++i) seen.insert(sampler.Sample(kLogits, {}, 0).token);
    return seen;
  };
  EXPECT_EQ(candidates({.top_k = 2}), (std::set<int32_t>{1, 4}));
  // Probabilities: 1 ≈ .39, 4 ≈ .35, 2 ≈ .14: the first two hold ≥ 0.7.
  EXPECT_EQ(candidates({.top_p = 0.7f}), (std::set<int32_t>{1, 4}));
  EXPECT_EQ(candidates({.top_p = 0.8f}), (std::set<int32_t>{1, 2, 4}));
  // min_p 0.3: keep p ≥ 0.3 × 0.39, i.e. tokens 1, 4 and 2 (0.14).
  EXPECT_EQ(candidates({.min_p = 0.3f}), (std::set<int32_t>{1, 2, 4}));
  EXPECT_EQ(candidates({.min_p = 0.5f}), (std::set<int32_t>{1, 4}));
}

TEST(SamplingTest, PenaltiesAndBiasChangeTheGreedyChoice) {
  const std::vector<int32_t> context = {0, 1, 1};  // prompt {0}, output {1, 1}
  Sampler repetition({.temperature = 0.0f, .repetition_penalty = 2.0f}, 1);
  EXPECT_EQ(repetition.Sample(kLogits, context, 2).token, 4);  // 3 / 2 < 2.9
  Sampler presence({.temperature = 0.0f, .presence_penalty = 0.2f}, 1);
  EXPECT_EQ(presence.Sample(kLogits, context, 2).token, 4);  // 3 - 0.2 < 2.9
  Sampler frequency({.temperature = 0.0f, .frequency_penalty = 0.06f}, 1);
  EXPECT_EQ(frequency.Sample(kLogits, context, 2).token, 4);  // 3 - 2 × 0.06 < 2.9
  Sampler prompt_only({.temperature = 0.0f, .presence_penalty = 2.0f}, 1);
  EXPECT_EQ(prompt_only.Sample(kLogits, std::vector<int32_t>{1}, 0).token, 1);
  SamplingParams biased{.temperature = 0.0f};
  biased.logit_bias = {{3, 100.0f}};
  Sampler bias(biased, 1);
  EXPECT_EQ(bias.Sample(kLogits, {}, 0).token, 3);
}

TEST(SamplingTest, BannedTokensAreNeverChosen) {
  Sampler sampler({.temperature = 0.0f}, 1);
  const std::vector<int32_t> banned = {1, 4};
  EXPECT_EQ(sampler.Sample(kLogits, {}, 0, banned).token, 2);
}

TEST(SamplingTest, LogprobsComeFromTheRawDistribution) {
  SamplingParams params{.temperature = 0.0f, .presence_penalty = 1.0f};
  params.top_logprobs = 2;
  Sampler sampler(params, 1);
  const SampledToken sampled = sampler.Sample(kLogits, std::vector<int32_t>{1}, 1);
  double total = 0.0;
  for (float logit : kLogits) total += std::exp(logit);
  EXPECT_EQ(sampled.token, 4);
  EXPECT_NEAR(sampled.logprob, 2.9 - std::log(total), 1e-5);
  ASSERT_EQ(sampled.top_logprobs.size(), 2u);
  EXPECT_EQ(sampled.top_logprobs[0].token, 1);
  EXPECT_NEAR(sampled.top_logprobs[0].logprob, 3.0 - std::log(total), 1e-5);
  EXPECT_EQ(sampled.top_logprobs[1].token, 4);
}

TEST(SamplingTest, ValidateRejectsOutOfRangeValues) {
  EXPECT_FALSE(SamplingParams{.temperature = -1.0f}.Validate(5).ok());
  EXPECT_FALSE(SamplingParams{.top_p = 0.0f}.Validate(5).ok());
  EXPECT_FALSE(SamplingParams{.min_p = 1.5f}.Validate(5).ok());
  EXPECT_FALSE(SamplingParams{.repetition_penalty = 0.0f}.Validate(5).ok());
  EXPECT_FALSE(SamplingParams{.presence_penalty = 3.0f}.Validate(5).ok());
  SamplingParams bad_bias;
  bad_bias.logit_bias = {{9, 1.0f}};
  EXPECT_FALSE(bad_bias.Validate(5).ok());
  EXPECT_TRUE(SamplingParams{}.Validate(5).ok());
}

}  // namespace
}  // namespace kvd::engine
