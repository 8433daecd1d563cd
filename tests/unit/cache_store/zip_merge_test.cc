// ZIP-merging: the attention output at the merge step is unchanged for the merge-step query,
// the fallback is taken in the degenerate cases and still keeps the softmax denominator, and
// the math survives large logits.
#include "cache_store/keepkv/zip_merge.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include "tests/unit/cache_store/merge_test_head.h"

namespace kvd::cache_store {
namespace {

using testing::Attend;
using testing::Attention;
using testing::Dot;
using testing::KvHead;
using testing::LogAddExp;
using testing::Logit;
using testing::RandomKvHead;
using testing::RandomVec;
using testing::RelativeError;
using testing::Vec;

// A random key whose logit under q is `logit` (up to float rounding).
Vec KeyWithLogit(std::mt19937& rng, const Vec& q, double logit) {
  Vec k = RandomVec(rng, q.size());
  const double shift = (logit - Logit(q, k)) * std::sqrt(double(q.size())) / Dot(q, q);
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<float>(k[i] + shift * q[i]);
  return k;
}

// Merges entry e into entry c of `head` under query q; returns the merged entry and replaces
// the pair by it in `head`.
MergedEntry MergeInHead(const Vec& q, KvHead& head, size_t e, size_t c,
                        const ZipMergeOptions& options = {}) {
  const float logit_e = static_cast<float>(Logit(q, head.keys[e]));
  const float logit_c = static_cast<float>(Logit(q, head.keys[c]));
  const MergeInput evicted{head.keys[e], head.values[e], head.log_votes[e], {&logit_e, 1}};
  const MergeInput kept{head.keys[c], head.values[c], head.log_votes[c], {&logit_c, 1}};
  absl::StatusOr<MergedEntry> merged = ZipMerge(evicted, kept, options);
  EXPECT_TRUE(merged.ok()) << merged.status();
  if (!merged.ok()) return {};
  head.keys[c] = merged->key;
  head.values[c] = merged->value;
  head.log_votes[c] = merged->log_vote;
  head.keys.erase(head.keys.begin() + e);
  head.values.erase(head.values.begin() + e);
  head.log_votes.erase(head.log_votes.begin() + e);
  return *merged;
}

TEST(ZipMergeTest, ExactRuleKeepsTheOutputAtTheMergeStep) {
  int exact = 0;
  for (size_t head_dim : {32u, 64u, 128u}) {
    for (uint32_t seed = 0; seed < 20; ++seed) {
      std::mt19937 rng(seed * 131 + head_dim);
      KvHead head = RandomKvHead(rng, 16, head_dim);
      const size_t e = 3, c = 11;
      // A query that attends to both entries of the pair, as a merge of similar keys sees.
      Vec q = RandomVec(rng, head_dim, 0.3);
      for (size_t i = 0; i < head_dim; ++i) q[i] += 0.25f * (head.keys[e][i] + head.keys[c][i]);
      const double log_p_sum = LogAddExp(head.log_votes[e], head.log_votes[c]);
      const Attention before = Attend(q, head);
      const MergedEntry merged = MergeInHead(q, head, e, c);
      if (merged.rule != MergeRule::kZip) continue;
      ++exact;
      const Attention after = Attend(q, head);
      EXPECT_LT(RelativeError(after.output, before.output), 1e-5) << head_dim << " " << seed;
      EXPECT_NEAR(after.log_denominator, before.log_denominator, 1e-5);
      EXPECT_NEAR(merged.log_vote, log_p_sum, 1e-6);  // votes add
      EXPECT_NEAR(Logit(q, merged.key), merged.target_logit, 1e-4);
      EXPECT_GE(merged.key_scale, 0.5);
      EXPECT_LE(merged.key_scale, 2.0);
    }
  }
  EXPECT_GE(exact, 40);  // most of the 60 pairs are well conditioned
}

// Random pairs, many of them degenerate: whichever rule applies, the merge step stays exact
// (the fallback moves L - D into the vote), and the fallback vote never exceeds ln(p_e + p_c).
TEST(ZipMergeTest, EveryRuleKeepsTheMergeStepWithTheDefaultOptions) {
  int fallbacks = 0;
  for (size_t head_dim : {32u, 64u, 128u}) {
    for (uint32_t seed = 0; seed < 50; ++seed) {
      std::mt19937 rng(seed * 7919 + head_dim);
      KvHead head = RandomKvHead(rng, 12, head_dim);
      const Vec q = RandomVec(rng, head_dim, 0.5);
      const double log_p_sum = LogAddExp(head.log_votes[0], head.log_votes[5]);
      const Attention before = Attend(q, head);
      const MergedEntry merged = MergeInHead(q, head, 0, 5);
      const Attention after = Attend(q, head);
      EXPECT_LT(RelativeError(after.output, before.output), 1e-5) << head_dim << " " << seed;
      EXPECT_NEAR(after.log_denominator, before.log_denominator, 1e-5);
      if (merged.rule == MergeRule::kWeightedMean) {
        ++fallbacks;
        EXPECT_NE(merged.fallback, FallbackReason::kNone);
        EXPECT_LE(merged.log_vote, log_p_sum + 1e-6);
      } else {
        EXPECT_NEAR(merged.log_vote, log_p_sum, 1e-6);
      }
    }
  }
  EXPECT_GT(fallbacks, 0);
}

struct DegenerateCase {
  double logit_e, logit_c;
  float log_vote_e, log_vote_c;
  FallbackReason reason;
};

class ZipMergeFallbackTest : public ::testing::TestWithParam<DegenerateCase> {};

TEST_P(ZipMergeFallbackTest, FallsBackToTheWeightedMeanAndKeepsTheDenominator) {
  const DegenerateCase& dc = GetParam();
  for (size_t head_dim : {32u, 64u, 128u}) {
    std::mt19937 rng(head_dim);
    KvHead head = RandomKvHead(rng, 8, head_dim);
    const Vec q = RandomVec(rng, head_dim);
    head.keys[2] = KeyWithLogit(rng, q, dc.logit_e);
    head.keys[6] = KeyWithLogit(rng, q, dc.logit_c);
    head.log_votes[2] = dc.log_vote_e;
    head.log_votes[6] = dc.log_vote_c;
    const Vec k_e = head.keys[2], k_c = head.keys[6];
    const double log_w_e = dc.log_vote_e + Logit(q, k_e);
    const double log_w_c = dc.log_vote_c + Logit(q, k_c);
    const double log_w_sum = LogAddExp(log_w_e, log_w_c);
    const Attention before = Attend(q, head);

    const MergedEntry merged = MergeInHead(q, head, 2, 6);
    EXPECT_EQ(merged.rule, MergeRule::kWeightedMean);
    EXPECT_EQ(merged.fallback, dc.reason) << "key_scale " << merged.key_scale;
    // No rescale: the key is the score-weighted mean of the two keys.
    const double alpha_e = std::exp(log_w_e - log_w_sum);
    for (size_t i = 0; i < head_dim; ++i) {
      EXPECT_NEAR(merged.key[i], alpha_e * k_e[i] + (1 - alpha_e) * k_c[i], 1e-5);
    }
    // Sum of w preserved: p_r exp(q.k_r / sqrt(d)) = w_e + w_c.
    EXPECT_NEAR(merged.log_vote + Logit(q, merged.key), log_w_sum, 1e-5);
    const Attention after = Attend(q, head);
    EXPECT_NEAR(after.log_denominator, before.log_denominator, 1e-5);
    EXPECT_LT(RelativeError(after.output, before.output), 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Degenerate, ZipMergeFallbackTest,
    ::testing::Values(
        // Equal w with opposite-sign log-scores: D = 0 exactly.
        DegenerateCase{1.0, -1.0, 0.0f, 2.0f, FallbackReason::kNearZeroDenominator},
        // Both logits tiny: D ~ 1e-4.
        DegenerateCase{4e-4, -2e-4, 0.0f, 0.0f, FallbackReason::kNearZeroDenominator},
        // Heavy vote on a low score: L < 0 < D, f < 0.
        DegenerateCase{5.0, -3.0, 0.0f, float(std::log(1000.0)), FallbackReason::kNegativeScale},
        // Both logits negative, far apart: D < 0, f = L / D > 2.
        DegenerateCase{-0.2, -3.0, 0.0f, 0.0f, FallbackReason::kScaleOutOfBounds}));

TEST(ZipMergeTest, FallbackCanAddVotesInstead) {
  std::mt19937 rng(5);
  const Vec q = RandomVec(rng, 64);
  const Vec k_e = KeyWithLogit(rng, q, 1.0), k_c = KeyWithLogit(rng, q, -1.0);
  const Vec v = RandomVec(rng, 64);
  const float l_e = 1.0f, l_c = -1.0f;
  ZipMergeOptions options;
  options.preserve_denominator_on_fallback = false;
  absl::StatusOr<MergedEntry> merged =
      ZipMerge({k_e, v, 0.0f, {&l_e, 1}}, {k_c, v, 2.0f, {&l_c, 1}}, options);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->rule, MergeRule::kWeightedMean);
  EXPECT_NEAR(merged->log_vote, LogAddExp(0.0, 2.0), 1e-6);
}

TEST(ZipMergeTest, IdenticalKeysKeepTheKey) {
  for (size_t head_dim : {32u, 64u, 128u}) {
    std::mt19937 rng(head_dim + 1);
    const Vec q = RandomVec(rng, head_dim);
    const Vec k = KeyWithLogit(rng, q, 1.5);
    const Vec v_e = RandomVec(rng, head_dim), v_c = RandomVec(rng, head_dim);
    const float logit = static_cast<float>(Logit(q, k));
    absl::StatusOr<MergedEntry> merged =
        ZipMerge({k, v_e, 0.7f, {&logit, 1}}, {k, v_c, 0.0f, {&logit, 1}});
    ASSERT_TRUE(merged.ok()) << merged.status();
    EXPECT_EQ(merged->rule, MergeRule::kZip);
    EXPECT_NEAR(merged->key_scale, 1.0, 1e-9);
    EXPECT_NEAR(merged->log_vote, LogAddExp(0.7, 0.0), 1e-6);
    const double alpha_e = std::exp(0.7) / (std::exp(0.7) + 1.0);
    for (size_t i = 0; i < head_dim; ++i) {
      EXPECT_NEAR(merged->key[i], k[i], 1e-6 * (1 + std::abs(k[i])));
      EXPECT_NEAR(merged->value[i], alpha_e * v_e[i] + (1 - alpha_e) * v_c[i], 1e-6);
    }
  }
}

TEST(ZipMergeTest, LargeLogitsDoNotOverflow) {
  for (size_t head_dim : {32u, 64u, 128u}) {
    std::mt19937 rng(head_dim + 2);
    KvHead head = RandomKvHead(rng, 10, head_dim);
    const Vec q = RandomVec(rng, head_dim);
    head.keys[1] = KeyWithLogit(rng, q, 80.0);
    head.keys[4] = KeyWithLogit(rng, q, 85.0);
    head.keys[7] = KeyWithLogit(rng, q, 82.0);
    const Attention before = Attend(q, head);
    const MergedEntry merged = MergeInHead(q, head, 1, 4);
    EXPECT_EQ(merged.rule, MergeRule::kZip);
    EXPECT_TRUE(std::isfinite(merged.log_vote));
    EXPECT_TRUE(std::isfinite(merged.key_scale));
    for (float x : merged.key) ASSERT_TRUE(std::isfinite(x));
    for (float x : merged.value) ASSERT_TRUE(std::isfinite(x));
    const Attention after = Attend(q, head);
    EXPECT_LT(RelativeError(after.output, before.output), 1e-5);
    EXPECT_NEAR(after.log_denominator, before.log_denominator, 1e-5 * 85);
  }
  // And across a GQA group, where exp(logit) is summed over heads.
  const Vec k(64, 0.5f), v(64, 1.0f);
  const std::vector<float> logits_e{80.0f, 88.0f, 85.0f, 90.0f};
  const std::vector<float> logits_c{84.0f, 81.0f, 89.0f, 86.0f};
  absl::StatusOr<MergedEntry> merged = ZipMerge({k, v, 0.0f, logits_e}, {k, v, 0.0f, logits_c});
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_TRUE(std::isfinite(merged->log_vote));
  EXPECT_TRUE(std::isfinite(merged->target_logit));
  for (float x : merged->key) EXPECT_TRUE(std::isfinite(x));
}

TEST(ZipMergeTest, GqaSumsScoresOverTheGroup) {
  std::mt19937 rng(9);
  const Vec k_e = RandomVec(rng, 32), k_c = RandomVec(rng, 32);
  const Vec v_e = RandomVec(rng, 32), v_c = RandomVec(rng, 32);
  const std::vector<float> logits_e{1.0f, 2.5f, 0.3f, 1.7f};
  const std::vector<float> logits_c{2.0f, 0.4f, 1.1f, 0.9f};
  auto log_sum_exp = [](const std::vector<float>& ls) {
    double sum = 0.0;
    for (float l : ls) sum += std::exp(double(l));
    return static_cast<float>(std::log(sum));
  };
  const float agg_e = log_sum_exp(logits_e), agg_c = log_sum_exp(logits_c);
  absl::StatusOr<MergedEntry> group =
      ZipMerge({k_e, v_e, 0.3f, logits_e}, {k_c, v_c, 0.0f, logits_c});
  absl::StatusOr<MergedEntry> single =
      ZipMerge({k_e, v_e, 0.3f, {&agg_e, 1}}, {k_c, v_c, 0.0f, {&agg_c, 1}});
  ASSERT_TRUE(group.ok()) << group.status();
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_EQ(group->rule, single->rule);
  EXPECT_NEAR(group->key_scale, single->key_scale, 1e-6);
  EXPECT_NEAR(group->log_vote, single->log_vote, 1e-6);
  for (size_t i = 0; i < 32; ++i) {
    EXPECT_NEAR(group->key[i], single->key[i], 1e-5);
    EXPECT_NEAR(group->value[i], single->value[i], 1e-6);
  }
}

TEST(ZipMergeTest, RefusesInconsistentInput) {
  const Vec k32(32, 1.0f), k64(64, 1.0f);
  const float one = 1.0f, nan = NAN;
  const std::vector<float> two{1.0f, 2.0f};
  EXPECT_EQ(ZipMerge({k32, k32, 0.0f, {&one, 1}}, {k64, k64, 0.0f, {&one, 1}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ZipMerge({k32, k32, 0.0f, {&one, 1}}, {k32, k32, 0.0f, two}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ZipMerge({k32, k64, 0.0f, {&one, 1}}, {k32, k32, 0.0f, {&one, 1}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ZipMerge({k32, k32, 0.0f, {&nan, 1}}, {k32, k32, 0.0f, {&one, 1}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ZipMerge({{}, {}, 0.0f, {&one, 1}}, {{}, {}, 0.0f, {&one, 1}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  ZipMergeOptions bad;
  bad.min_key_scale = 0.0;
  EXPECT_FALSE(bad.Validate().ok());
  EXPECT_EQ(ZipMerge({k32, k32, 0.0f, {&one, 1}}, {k32, k32, 0.0f, {&one, 1}}, bad).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvd::cache_store
