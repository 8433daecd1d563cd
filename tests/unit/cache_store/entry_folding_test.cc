// Merge instead of evict for documents: a dropped entry folds into the kept entry of its head
// whose key points the most alike, weighted by score and vote; an entry of score zero changes
// nothing; the prefix neither folds nor takes folds; a cut with merge keeps the same entries
// as one without.
#include "cache_store/kvzip/entry_folding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "cache_store/kvzip/recut.h"
#include "cache_store/store/kv_storage.h"

namespace kvd::cache_store {
namespace {

constexpr float kPrefix = std::numeric_limits<float>::infinity();

// A head of head_dim 2 holding positions 0..n-1, position 0 the prefix.
HeadKv Head(const std::vector<std::vector<float>>& keys, const std::vector<float>& document_scores,
            std::vector<float> log_votes = {}) {
  HeadKv head;
  head.scores.push_back(kPrefix);
  head.scores.insert(head.scores.end(), document_scores.begin(), document_scores.end());
  for (size_t i = 0; i < keys.size(); ++i) {
    head.positions.push_back(static_cast<int32_t>(i));
    head.keys.insert(head.keys.end(), keys[i].begin(), keys[i].end());
    // Values distinct from keys so a mix-up shows.
    head.values.push_back(10.0f * keys[i][0] + 1.0f);
    head.values.push_back(-keys[i][1]);
  }
  head.log_votes = log_votes.empty() ? std::vector<float>(keys.size(), 0.0f) : log_votes;
  return head;
}

TEST(FoldDroppedEntries, AnEntryOfScoreZeroChangesNothing) {
  const HeadKv head = Head({{1, 0}, {1, 0.1f}, {0.9f, 0.2f}, {0, 1}}, {0.5f, 0.0f, 0.3f});
  const std::vector<bool> keep = {true, true, false, true};
  const HeadKv folded = FoldDroppedEntries(head, keep, 1, 2);
  EXPECT_EQ(folded.positions, (std::vector<int32_t>{0, 1, 3}));
  EXPECT_EQ(folded.keys, (std::vector<float>{1, 0, 1, 0.1f, 0, 1}));
  EXPECT_EQ(folded.log_votes, (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(folded.scores, head.scores);
}

TEST(FoldDroppedEntries, FoldsByMassIntoTheMostAlikeKeyAndCarriesTheVotes) {
  // Kept: 1 (score 0.6, along x) and 3 (score 0.4, along y); dropped: 2 (score 0.2, vote 2,
  // nearly along x).
  const HeadKv head =
      Head({{1, 0}, {1, 0}, {1, 0.2f}, {0, 1}}, {0.6f, 0.2f, 0.4f}, {0, 0, std::log(2.0f), 0});
  const HeadKv folded = FoldDroppedEntries(head, {true, true, false, true}, 1, 2);
  ASSERT_EQ(folded.positions, (std::vector<int32_t>{0, 1, 3}));
  const double own = 0.6, added = 0.2 * 2.0, total = own + added;
  EXPECT_NEAR(folded.keys[2], (own * 1 + added * 1) / total, 1e-6);
  EXPECT_NEAR(folded.keys[3], (own * 0 + added * 0.2) / total, 1e-6);
  EXPECT_NEAR(folded.values[2], (own * 11 + added * 11) / total, 1e-5);
  EXPECT_NEAR(folded.values[3], (own * 0 + added * -0.2) / total, 1e-6);
  EXPECT_NEAR(folded.log_votes[1], std::log(total / own), 1e-6);
  // The other kept entry and the prefix are untouched.
  EXPECT_EQ(folded.keys[4], 0.0f);
  EXPECT_EQ(folded.keys[5], 1.0f);
  EXPECT_EQ(folded.log_votes[2], 0.0f);
  EXPECT_EQ(folded.log_votes[0], 0.0f);
}

TEST(FoldDroppedEntries, SeveralDropsFoldIntoOneTargetTogether) {
  const HeadKv head = Head({{1, 0}, {1, 0}, {1, 0.3f}, {1, -0.2f}}, {0.5f, 0.2f, 0.1f});
  const HeadKv folded = FoldDroppedEntries(head, {true, true, false, false}, 1, 2);
  const double total = 0.5 + 0.2 + 0.1;
  EXPECT_NEAR(folded.keys[2], 1.0, 1e-6);
  EXPECT_NEAR(folded.keys[3], (0.2 * 0.3 + 0.1 * -0.2) / total, 1e-6);
  EXPECT_NEAR(folded.values[3], (0.2 * -0.3 + 0.1 * 0.2) / total, 1e-6);
  EXPECT_NEAR(folded.log_votes[1], std::log(total / 0.5), 1e-6);
}

TEST(FoldDroppedEntries, HugeVotesFoldInLogSpaceAndStayFinite) {
  // A dropped entry with a vote of e^80 outweighs its target by far: the fold is its key, and
  // the target's vote takes its mass, with no overflow on the way.
  const HeadKv head = Head({{1, 0}, {1, 0}, {1, 0.2f}}, {0.5f, 0.5f}, {0, 0, 80.0f});
  const HeadKv folded = FoldDroppedEntries(head, {true, true, false}, 1, 2);
  EXPECT_NEAR(folded.keys[3], 0.2, 1e-6);
  EXPECT_NEAR(folded.log_votes[1], 80.0, 1e-4);
  const HeadKv hostile = Head({{1, 0}, {1, 0}, {1, 0.2f}}, {0.5f, 0.5f}, {0, 0, 3e38f});
  const HeadKv kept = FoldDroppedEntries(hostile, {true, true, false}, 1, 2);
  for (float x : kept.keys) EXPECT_TRUE(std::isfinite(x));
  for (float x : kept.log_votes) EXPECT_TRUE(std::isfinite(x));
}

TEST(FoldDroppedEntries, OnlyKeptEntriesNearByPositionAreCandidates) {
  // 40 kept entries along y between a kept entry along x (position 1) and a dropped one along x
  // (position 42): the x entry is beyond the candidates, so the drop folds nowhere.
  std::vector<std::vector<float>> keys = {{0, 1}, {1, 0}};
  for (int i = 0; i < 40; ++i) keys.push_back({0, 1});
  keys.push_back({1, 0});
  std::vector<float> scores(41, 0.5f);
  scores.push_back(0.4f);
  const HeadKv head = Head(keys, scores);
  std::vector<bool> keep(keys.size(), true);
  keep.back() = false;
  ASSERT_LT(kFoldCandidatesPerSide, 41);
  const HeadKv folded = FoldDroppedEntries(head, keep, 1, 2);
  EXPECT_EQ(folded.keys[2], 1.0f);
  EXPECT_EQ(folded.log_votes[1], 0.0f);
}

TEST(FoldDroppedEntries, AKeyPointingAwayFromEveryKeptOneIsDroppedAndThePrefixTakesNoFold) {
  // Dropped 2 points against kept 1; the prefix 0 points along it but takes no folds.
  const HeadKv head = Head({{-1, 0}, {1, 0}, {-1, 0.1f}}, {0.5f, 0.4f});
  const HeadKv folded = FoldDroppedEntries(head, {true, true, false}, 1, 2);
  EXPECT_EQ(folded.keys, (std::vector<float>{-1, 0, 1, 0}));
  EXPECT_EQ(folded.log_votes, (std::vector<float>{0, 0}));
}

TEST(FoldDroppedEntries, OnlyKeysPointingAlmostAlikeFold) {
  // Dropped 2 is at cosine 0.89 to kept 1 (below kMinFoldCosine); dropped 3 at 0.995.
  const HeadKv head = Head({{0, 1}, {1, 0}, {1, 0.5f}, {1, 0.1f}}, {0.5f, 0.4f, 0.3f});
  ASSERT_LT(kMinFoldCosine, 0.995f);
  ASSERT_GT(kMinFoldCosine, 0.9f);
  const HeadKv folded = FoldDroppedEntries(head, {true, true, false, false}, 1, 2);
  EXPECT_NEAR(folded.keys[3], (0.3 * 0.1) / 0.8, 1e-6);
  EXPECT_NEAR(folded.log_votes[1], std::log(0.8 / 0.5), 1e-6);
}

TEST(CutPayloadWithMerge, KeepsTheSameEntriesAsEvictionAndFoldsOnlyWhatHasMass) {
  DocumentPayload payload;
  payload.num_layers = 1;
  payload.num_kv_heads = 2;
  payload.head_dim = 2;
  payload.original_length = 5;
  payload.heads = {
      Head({{1, 0}, {1, 0}, {1, 0.1f}, {0.5f, 0.5f}, {0, 1}}, {0.9f, 0.3f, 0.2f, 0.8f}),
      Head({{0, 1}, {0, 1}, {0.1f, 1}, {1, 1}, {1, 0}}, {0.7f, 0.0f, 0.0f, 0.6f})};
  auto evicted = CutPayload(payload, CompressionMethod::kKvzip, 4, /*merge=*/false);
  auto merged = CutPayload(payload, CompressionMethod::kKvzip, 4, /*merge=*/true);
  ASSERT_TRUE(evicted.ok() && merged.ok());
  for (size_t h = 0; h < 2; ++h) {
    EXPECT_EQ(merged->heads[h].positions, evicted->heads[h].positions);
  }
  EXPECT_NE(merged->heads[0].keys, evicted->heads[0].keys) << "head 0's drops have mass";
  EXPECT_EQ(merged->heads[1], evicted->heads[1]) << "head 1's drops score zero";

  // A compact cache's folds are rounded to its precision: what a store would read back.
  payload.storage = KvStorage::kInt8;
  auto compact = CutPayload(payload, CompressionMethod::kKvzip, 4, /*merge=*/true);
  ASSERT_TRUE(compact.ok());
  DocumentPayload rounded = *compact;
  RoundForStorage(KvStorage::kInt8, rounded);
  EXPECT_EQ(rounded, *compact);
  EXPECT_NE(compact->heads[0].keys, merged->heads[0].keys);
}

}  // namespace
}  // namespace kvd::cache_store
