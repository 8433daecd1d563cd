// Sampling from a row's top logits (Sampler::SampleFromTop) against sampling from the whole row:
// a sequence that takes the top logits whenever they decide, and the whole row otherwise, draws
// exactly the tokens one that always takes the whole row draws.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "engine/sampling.h"
#include "kernels/backend.h"

namespace kvd::engine {
namespace {

// A row's k most likely logits and its log-normalizers (relative to its largest logit), as a
// backend returns them.
struct TopOfRow {
  TopOfRow(const std::vector<float>& logits, int32_t k, float temperature) {
    std::vector<int32_t> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    for (int32_t i = 0; i < k; ++i) {
      ids.push_back(order[i]);
      values.push_back(logits[order[i]]);
    }
    const double scale = temperature > 0.0f ? 1.0 / temperature : 1.0;
    const auto log_normalizer = [&](double s) {
      double total = 0.0;
      for (float logit : logits) total += std::exp((logit - values[0]) * s);
      return static_cast<float>(std::log(total));
    };
    top = {values, ids, log_normalizer(1.0), log_normalizer(scale),
           static_cast<int32_t>(logits.size())};
  }
  std::vector<float> values;
  std::vector<int32_t> ids;
  TopLogits top;
};

struct Case {
  std::string name;
  SamplingParams params;
  float logit_scale;          // spread of the random logits: small is flat, large is peaked
  float logit_offset = 0.0f;  // added to every logit
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> Cases() {
  std::vector<Case> cases = {
      {"greedy", {.temperature = 0.0f}, 2.0f},
      {"greedy_logprobs", {.temperature = 0.0f, .logprobs = true, .top_logprobs = 5}, 2.0f},
      {"temperature", {.temperature = 1.0f}, 2.0f},
      {"flat", {.temperature = 1.0f}, 0.3f},
      {"peaked", {.temperature = 0.5f, .logprobs = true, .top_logprobs = 3}, 4.0f},
      {"top_k_inside", {.temperature = 0.8f, .top_k = 10}, 1.0f},
      {"top_k_beyond", {.temperature = 0.8f, .top_k = 40}, 1.0f},
      {"top_p", {.temperature = 1.0f, .top_p = 0.5f}, 2.0f},
      {"top_p_wide", {.temperature = 1.2f, .top_p = 0.95f}, 1.0f},
      {"min_p", {.temperature = 1.0f, .min_p = 0.05f}, 2.0f},
      {"min_p_flat", {.temperature = 1.0f, .min_p = 0.05f}, 0.2f},
      {"min_p_top_p", {.temperature = 0.9f, .top_p = 0.9f, .min_p = 0.3f}, 1.5f},
      {"penalties",
       {.temperature = 1.0f, .repetition_penalty = 1.3f, .presence_penalty = 0.5f},
       2.0f},
  };
  // Large logits at a low temperature: the total the backend's float normalizer gives must not
  // tip a draw the whole row decides otherwise.
  cases.push_back({"low_temperature_large_logits", {.temperature = 0.01f}, 0.04f, 40.0f});
  cases.push_back({"low_temperature_nucleus", {.temperature = 0.02f, .top_p = 0.7f}, 0.05f, 45.0f});
  Case bias{"bias", {.temperature = 0.0f}, 2.0f};
  bias.params.logit_bias = {{7, 5.0f}};
  cases.push_back(bias);
  return cases;
}

class SamplingFromTopTest : public ::testing::TestWithParam<Case> {};

TEST_P(SamplingFromTopTest, TakesTheSameTokensAsTheWholeRow) {
  constexpr int32_t kVocab = 500, kTop = 16, kSteps = 300;
  const Case& c = GetParam();
  const uint32_t seed = std::random_device{}();
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, c.logit_scale);
  Sampler whole(c.params, 11), from_top(c.params, 11);
  std::vector<int32_t> context = {1, 2, 3};
  int32_t decided = 0;
  for (int32_t step = 0; step < kSteps; ++step) {
    std::vector<float> logits(kVocab);
    for (float& x : logits) x = c.logit_offset + normal(random);
    const size_t output = context.size() - 3;
    const SampledToken expected = whole.Sample(logits, context, output);
    const TopOfRow top(logits, kTop, c.params.temperature);
    std::optional<SampledToken> actual = from_top.SampleFromTop(top.top);
    if (actual) {
      ++decided;
    } else {
      actual = from_top.Sample(logits, context, output);
    }
    ASSERT_EQ(actual->token, expected.token) << "step " << step << ", seed " << seed;
    EXPECT_NEAR(actual->logprob, expected.logprob, 1e-5) << "step " << step;
    ASSERT_EQ(actual->top_logprobs.size(), expected.top_logprobs.size());
    for (size_t i = 0; i < expected.top_logprobs.size(); ++i) {
      EXPECT_EQ(actual->top_logprobs[i].token, expected.top_logprobs[i].token);
      EXPECT_NEAR(actual->top_logprobs[i].logprob, expected.top_logprobs[i].logprob, 1e-5);
    }
    context.push_back(expected.token);
  }
  // What the top logits can decide, they decide: every greedy pick and a draw inside top_k; a
  // draw of the whole row falls past 16 of 500 tokens now and then; penalties and bias need it.
  const bool always = c.params.temperature == 0.0f && c.name != "bias";
  if (always || c.name == "top_k_inside") {
    EXPECT_EQ(decided, kSteps);
  } else if (c.name == "penalties" || c.name == "bias" || c.name == "top_k_beyond") {
    EXPECT_EQ(decided, 0);
  } else if (c.name == "peaked" || c.name == "top_p") {
    EXPECT_GT(decided, kSteps / 2);
  }
}

INSTANTIATE_TEST_SUITE_P(Params, SamplingFromTopTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

TEST(SamplingFromTopTest, GreedySkipsBannedTokensAndADrawLeavesThemToTheWholeRow) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 0.5f, 2.9f};
  const TopOfRow top(logits, 3, 1.0f);  // ids 1, 4, 2
  Sampler greedy({.temperature = 0.0f}, 1);
  const std::vector<int32_t> banned = {1};
  EXPECT_EQ(greedy.SampleFromTop(top.top, banned)->token, 4);
  const std::vector<int32_t> all_top = {1, 4, 2};
  EXPECT_FALSE(greedy.SampleFromTop(top.top, all_top).has_value());
  Sampler sampler({.temperature = 1.0f, .top_k = 2}, 1);
  EXPECT_FALSE(sampler.SampleFromTop(top.top, banned).has_value());
  EXPECT_TRUE(sampler.SampleFromTop(top.top).has_value());
}

// A step asks for as few top logits as its rows need: a greedy pick gets just enough to pass
// its banned tokens (the worst case: they are the most likely ones) and to report its
// alternatives, and decides exactly as the whole row does; anything else asks for the most.
TEST(SamplingFromTopTest, AGreedyPickIsDecidedByTheTopLogitsItAsksFor) {
  std::mt19937 random(7);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (const int32_t top_logprobs : {0, 1, 5, 20}) {
    for (const size_t banned_count : {0, 1, 3}) {
      Sampler whole({.temperature = 0.0f, .logprobs = true, .top_logprobs = top_logprobs}, 1);
      Sampler from_top({.temperature = 0.0f, .logprobs = true, .top_logprobs = top_logprobs}, 1);
      std::vector<float> logits(300);
      for (float& x : logits) x = normal(random);
      const TopOfRow sorted(logits, 300, 1.0f);
      const std::vector<int32_t> banned(sorted.ids.begin(),
                                        sorted.ids.begin() + static_cast<ptrdiff_t>(banned_count));
      const int32_t k = from_top.TopLogitsToDecide(banned.size(), false);
      EXPECT_EQ(k, std::max<int32_t>(static_cast<int32_t>(banned_count) + 1, top_logprobs));
      const std::optional<SampledToken> actual =
          from_top.SampleFromTop(TopOfRow(logits, k, 1.0f).top, banned);
      ASSERT_TRUE(actual.has_value()) << k;
      const SampledToken expected = whole.Sample(logits, {}, 0, banned);
      EXPECT_EQ(actual->token, expected.token);
      EXPECT_NEAR(actual->logprob, expected.logprob, 1e-5);
      ASSERT_EQ(actual->top_logprobs.size(), expected.top_logprobs.size());
      for (size_t i = 0; i < expected.top_logprobs.size(); ++i) {
        EXPECT_EQ(actual->top_logprobs[i].token, expected.top_logprobs[i].token);
      }
      if (k > 1 && banned_count > 0) {
        // One fewer leaves the pick to the whole row.
        EXPECT_FALSE(from_top.SampleFromTop(TopOfRow(logits, k - 1, 1.0f).top, banned));
      }
    }
  }
  const Sampler greedy({.temperature = 0.0f}, 1);
  EXPECT_EQ(greedy.TopLogitsToDecide(0, true), kernels::kMaxTopLogits);
  EXPECT_EQ(Sampler({.temperature = 0.7f}, 1).TopLogitsToDecide(0, false), kernels::kMaxTopLogits);
  EXPECT_EQ(Sampler({.temperature = 0.0f, .presence_penalty = 0.5f}, 1).TopLogitsToDecide(0, false),
            kernels::kMaxTopLogits);
}

// Under a constraint, the top logits and the whole row still take the same tokens, and only
// allowed ones; the top logits decide a greedy pick and a draw with top_k inside them.
TEST(SamplingFromTopTest, AConstraintIsHonouredAndDecidedTheSameEitherWay) {
  constexpr int32_t kVocab = 300, kTop = 16, kSteps = 200;
  for (const SamplingParams& params :
       {SamplingParams{.temperature = 0.0f}, SamplingParams{.temperature = 1.0f, .top_k = 3},
        SamplingParams{.temperature = 1.0f, .top_p = 0.9f}}) {
    std::mt19937 random(5);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    Sampler whole(params, 3), from_top(params, 3);
    int32_t decided = 0;
    for (int32_t step = 0; step < kSteps; ++step) {
      std::vector<float> logits(kVocab);
      for (float& x : logits) x = normal(random);
      // A third of the vocabulary allowed, a different third each step.
      std::vector<uint64_t> words((kVocab + 63) / 64, 0);
      for (int32_t token = 0; token < kVocab; ++token) {
        if ((token + step) % 3 == 0) words[token / 64] |= uint64_t{1} << (token % 64);
      }
      const AllowedTokens allowed{words};
      const SampledToken expected = whole.Sample(logits, {}, 0, {}, allowed);
      ASSERT_TRUE(allowed.allows(expected.token));
      const TopOfRow top(logits, kTop, params.temperature);
      std::optional<SampledToken> actual = from_top.SampleFromTop(top.top, {}, allowed);
      if (actual) {
        ++decided;
      } else {
        actual = from_top.Sample(logits, {}, 0, {}, allowed);
      }
      ASSERT_EQ(actual->token, expected.token) << "step " << step;
    }
    if (params.top_p < 1.0f) {
      EXPECT_EQ(decided, 0) << "a nucleus over a constraint needs the whole row";
    } else if (params.temperature == 0.0f) {
      EXPECT_EQ(decided, kSteps) << "16 top logits always hold an allowed one";
    } else {
      EXPECT_GT(decided, kSteps * 9 / 10) << "top_k 3 is nearly always among them";
    }
  }
}

TEST(SamplingFromTopTest, AnOverflowedNormalizerLeavesTheDrawToTheWholeRow) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 0.5f, 2.9f};
  TopOfRow top(logits, 3, 1.0f);
  top.top.tempered_log_normalizer = std::numeric_limits<float>::infinity();
  Sampler sampler({.temperature = 1e-30f}, 1);
  EXPECT_FALSE(sampler.SampleFromTop(top.top).has_value());
  EXPECT_EQ(sampler.Sample(logits, {}, 0).token, 1);
}

}  // namespace
}  // namespace kvd::engine
