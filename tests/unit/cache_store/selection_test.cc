// Entry selection rules on hand-made scores: KVzip's joint top over heads, the per-head
// baselines, pooling, and the budget arithmetic.
#include "cache_store/kvzip/selection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "cache_store/kvzip/compression_spec.h"

namespace kvd::cache_store {
namespace {

using Positions = std::vector<int32_t>;

TEST(SelectJointTop, KeepsTheHighestScoresOfAllHeadsSoHeadsKeepDifferentCounts) {
  const HeadScores scores = {
      {0.9f, 0.1f, 0.8f, 0.2f}, {0.05f, 0.04f, 0.03f, 0.02f}, {0.7f, 0.6f, 0.95f, 0.5f}};
  const HeadSelection kept = SelectJointTop(scores, 5);
  EXPECT_EQ(kept[0], (Positions{0, 2}));
  EXPECT_TRUE(kept[1].empty()) << "a head may keep nothing";
  EXPECT_EQ(kept[2], (Positions{0, 1, 2}));
}

TEST(SelectJointTop, BreaksTiesTowardsTheLowerHeadThenTheEarlierPosition) {
  const HeadScores scores = {{0.5f, 0.5f}, {0.5f, 0.5f}};
  const HeadSelection kept = SelectJointTop(scores, 3);
  EXPECT_EQ(kept[0], (Positions{0, 1}));
  EXPECT_EQ(kept[1], (Positions{0}));
  EXPECT_EQ(SelectJointTop(scores, 0)[0].size(), 0u);
  EXPECT_EQ(SelectJointTop(scores, 99)[1].size(), 2u);
}

TEST(SelectPerHeadTop, SpreadsTheBudgetEvenlyWithTheRemainderFirst) {
  const HeadScores scores = {{0.1f, 0.9f, 0.5f}, {0.9f, 0.8f, 0.7f}, {0.3f, 0.2f, 0.1f}};
  const HeadSelection kept = SelectPerHeadTop(scores, 4);
  EXPECT_EQ(kept[0], (Positions{1, 2}));
  EXPECT_EQ(kept[1], (Positions{0}));
  EXPECT_EQ(kept[2], (Positions{0}));
}

TEST(SelectHeavyAndRecent, HalfRecentRestHeavyHittersAmongTheOlder) {
  const HeadScores scores = {{0.9f, 0.1f, 0.8f, 0.2f, 0.3f, 0.0f}};
  const HeadSelection kept = SelectHeavyAndRecent(scores, 4);
  // Two most recent (4, 5), then the two best of positions 0-3 (0, 2).
  EXPECT_EQ(kept[0], (Positions{0, 2, 4, 5}));
}

TEST(SelectRecent, KeepsTheMostRecentShareOfEachHead) {
  const HeadScores scores = {{1, 2, 3, 4, 5}, {1, 2, 3, 4, 5}};
  const HeadSelection kept = SelectRecent(scores, 5);
  EXPECT_EQ(kept[0], (Positions{2, 3, 4}));
  EXPECT_EQ(kept[1], (Positions{3, 4}));
}

TEST(MaxPool, EachScoreBecomesTheMaximumOfItsWindow) {
  EXPECT_EQ(MaxPool({0, 0, 5, 0, 0, 0, 1}, 3), (std::vector<float>{0, 5, 5, 5, 0, 1, 1}));
  EXPECT_EQ(MaxPool({2}, 7), (std::vector<float>{2}));
}

TEST(SelectEntries, SnapKvPoolsBeforeSelecting) {
  // Without pooling position 4 would win; pooled, positions near the spike tie with it and the
  // earlier ones are kept.
  const HeadScores scores = {{0, 0, 0, 0.9f, 0, 0, 0, 0, 0, 0.1f}};
  EXPECT_EQ(SelectEntries(CompressionMethod::kSnapKv, scores, 2)[0], (Positions{0, 1}));
  EXPECT_EQ(SelectEntries(CompressionMethod::kNone, scores, 2)[0].size(), 10u);
}

TEST(CompressionSpec, ValidatesAndCountsKeptEntries) {
  EXPECT_TRUE((CompressionSpec{.method = CompressionMethod::kKvzip, .ratio = 0.3}).Validate().ok());
  EXPECT_FALSE((CompressionSpec{.ratio = 0.0}).Validate().ok());
  EXPECT_FALSE((CompressionSpec{.ratio = 1.5}).Validate().ok());
  EXPECT_FALSE((CompressionSpec{.method = CompressionMethod::kNone, .ratio = 0.5}).Validate().ok());
  EXPECT_FALSE((CompressionSpec{.method = CompressionMethod::kSnapKv}).Validate().ok());
  EXPECT_FALSE((CompressionSpec{.method = CompressionMethod::kH2O, .query = "q"}).Validate().ok());
  EXPECT_FALSE((CompressionSpec{.budget_tokens = 0}).Validate().ok());

  EXPECT_EQ((CompressionSpec{.ratio = 0.3}).KeptEntries(1000, 8), 300);
  EXPECT_EQ((CompressionSpec{.ratio = 0.0001}).KeptEntries(1000, 8), 1);
  EXPECT_EQ((CompressionSpec{.budget_tokens = 10}).KeptEntries(1000, 8), 80);
  EXPECT_EQ((CompressionSpec{.budget_tokens = 500}).KeptEntries(1000, 8), 1000);
  EXPECT_EQ(ParseCompressionMethod("h2o").value_or(CompressionMethod::kNone),
            CompressionMethod::kH2O);
  EXPECT_EQ(ParseCompressionMethod("random").status().code(), absl::StatusCode::kInvalidArgument);
}

// Importance as a profile gives it: one value per head, every position alike.
HeadScores ProfileScores(const std::vector<float>& importance, size_t length) {
  HeadScores scores;
  for (float value : importance) scores.emplace_back(length, value);
  return scores;
}

Positions Recent(int32_t count, int32_t length) {
  Positions positions;
  for (int32_t p = length - count; p < length; ++p) positions.push_back(p);
  return positions;
}

TEST(SelectByHeadImportance, AnEighthGoesToRecentWindowsTheRestToTheMostImportantHeads) {
  const HeadScores scores = ProfileScores({0.2f, 0.9f, 0.1f, 0.5f}, 20);
  // 40 entries: 5 as windows (2, 1, 1, 1 from head 0 on), 35 in importance order: head 1
  // fills to 20, head 3 then takes the other 16 (1 + 16 = 17).
  const HeadSelection kept = SelectByHeadImportance(scores, 40);
  EXPECT_EQ(kept[1], Recent(20, 20));
  EXPECT_EQ(kept[3], Recent(17, 20));
  EXPECT_EQ(kept[0], Recent(2, 20));
  EXPECT_EQ(kept[2], Recent(1, 20));
  EXPECT_EQ(SelectEntries(CompressionMethod::kKvzipHeads, scores, 40), kept);
}

TEST(SelectByHeadImportance, KeepsExactlyTheBudgetAndAtMostEverything) {
  const HeadScores scores = ProfileScores({0.3f, 0.7f, 0.7f}, 5);
  for (int64_t keep : {0, 1, 7, 8, 14, 15, 99}) {
    const HeadSelection kept = SelectByHeadImportance(scores, keep);
    int64_t total = 0;
    for (const Positions& positions : kept) total += static_cast<int64_t>(positions.size());
    EXPECT_EQ(total, std::min<int64_t>(keep, 15)) << keep;
  }
  // Ties go to the lower head: with no windows (keep < 8), head 1 fills before head 2.
  EXPECT_EQ(SelectByHeadImportance(scores, 7)[1], Recent(5, 5));
  EXPECT_EQ(SelectByHeadImportance(scores, 7)[2], Recent(2, 5));
  EXPECT_TRUE(SelectByHeadImportance(scores, 7)[0].empty());
}

TEST(SelectByHeadImportance, ChoosesOnlyHeldPositionsOfACutCache) {
  constexpr float kDropped = -std::numeric_limits<float>::infinity();
  const HeadScores scores = {{kDropped, 0.7f, kDropped, 0.7f}, {0.3f, kDropped, 0.3f, 0.3f}};
  // Head 0 holds two entries and is the more important: both, then head 1's most recent.
  const HeadSelection kept = SelectByHeadImportance(scores, 3);
  EXPECT_EQ(kept[0], (Positions{1, 3}));
  EXPECT_EQ(kept[1], (Positions{3}));
}

}  // namespace
}  // namespace kvd::cache_store
