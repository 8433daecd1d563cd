// KeepKV's pair selection: disjoint, most similar first, the lower score evicted, protected
// entries never touched, and the similarity floor and pair cap honoured.
#include "cache_store/keepkv/merge_pairs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

namespace kvd::cache_store {
namespace {

double Cosine(const std::vector<float>& keys, int32_t dim, int32_t a, int32_t b) {
  double dot = 0.0, na = 0.0, nb = 0.0;
  for (int32_t d = 0; d < dim; ++d) {
    dot += double{keys[a * dim + d]} * keys[b * dim + d];
    na += double{keys[a * dim + d]} * keys[a * dim + d];
    nb += double{keys[b * dim + d]} * keys[b * dim + d];
  }
  return dot / std::sqrt(na * nb);
}

TEST(SelectMergePairs, TakesTheMostSimilarDisjointPairsAndEvictsTheLowerScore) {
  // Entries 0 and 2 point the same way, 1 and 3 nearly so; 4 is alone.
  const std::vector<float> keys = {1, 0, 0, 0, 1, 0, 2, 0, 0, 0, 1, 0.1f, 0, 0, 1};
  const std::vector<uint8_t> mergeable(5, 1);
  const std::vector<float> scores = {0.5f, 0.1f, 0.2f, 0.3f, 0.9f};
  const auto pairs =
      SelectMergePairs(keys, 3, mergeable, scores, {.max_pairs = 10, .min_cosine = 0.8f});
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].evicted, 2);  // cosine 1: 2 scores lower than 0
  EXPECT_EQ(pairs[0].kept, 0);
  EXPECT_FLOAT_EQ(pairs[0].cosine, 1.0f);
  EXPECT_EQ(pairs[1].evicted, 1);  // 1 scores lower than 3
  EXPECT_EQ(pairs[1].kept, 3);
  EXPECT_NEAR(pairs[1].cosine, Cosine(keys, 3, 1, 3), 1e-6);
}

TEST(SelectMergePairs, NeverTouchesProtectedEntries) {
  const std::vector<float> keys = {1, 0, 1, 0, 1, 0.01f, 0, 1};
  const std::vector<uint8_t> mergeable = {0, 1, 1, 1};  // entry 0 is a sink
  const std::vector<float> scores = {1, 1, 1, 1};
  const auto pairs =
      SelectMergePairs(keys, 2, mergeable, scores, {.max_pairs = 4, .min_cosine = 0.5f});
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(std::set<int32_t>({pairs[0].evicted, pairs[0].kept}), std::set<int32_t>({1, 2}));
  EXPECT_EQ(pairs[0].evicted, 1) << "equal scores: the earlier entry goes";
}

TEST(SelectMergePairs, HonoursTheFloorAndTheCap) {
  const std::vector<float> keys = {1, 0, 0.6f, 0.8f, 1, 0.05f, 0, 1, 0.05f, 1};
  const std::vector<uint8_t> mergeable(5, 1);
  const std::vector<float> scores(5, 0.0f);
  EXPECT_EQ(
      SelectMergePairs(keys, 2, mergeable, scores, {.max_pairs = 1, .min_cosine = 0.8f}).size(),
      1u);
  for (const MergePair& pair :
       SelectMergePairs(keys, 2, mergeable, scores, {.max_pairs = 9, .min_cosine = 0.99f})) {
    EXPECT_GE(pair.cosine, 0.99f);
  }
  EXPECT_TRUE(SelectMergePairs(keys, 2, mergeable, scores, {.max_pairs = 0}).empty());
  // A zero key has no direction: it never merges.
  const std::vector<float> zero = {0, 0, 0, 0};
  EXPECT_TRUE(SelectMergePairs(zero, 2, std::vector<uint8_t>(2, 1), std::vector<float>(2, 0),
                               {.max_pairs = 1, .min_cosine = 0.0f})
                  .empty());
}

TEST(SelectMergePairs, RandomInputsGiveDisjointMergeablePairsInDecreasingSimilarity) {
  std::mt19937 random(17);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  constexpr int32_t kEntries = 96, kDim = 8;
  std::vector<float> keys(kEntries * kDim);
  // Clusters of near-duplicates, as neighbouring tokens often give.
  for (int32_t i = 0; i < kEntries; ++i) {
    for (int32_t d = 0; d < kDim; ++d) {
      keys[i * kDim + d] = (i / 4 == d % 24 ? 3.0f : 0.0f) + 0.3f * normal(random);
    }
  }
  std::vector<uint8_t> mergeable(kEntries, 1);
  std::vector<float> scores(kEntries);
  for (int32_t i = 0; i < kEntries; ++i) {
    mergeable[i] = i % 7 != 0;
    scores[i] = std::abs(normal(random));
  }
  const auto pairs =
      SelectMergePairs(keys, kDim, mergeable, scores, {.max_pairs = 30, .min_cosine = 0.5f});
  ASSERT_FALSE(pairs.empty());
  EXPECT_LE(pairs.size(), 30u);
  std::set<int32_t> used;
  for (size_t p = 0; p < pairs.size(); ++p) {
    const MergePair& pair = pairs[p];
    EXPECT_TRUE(mergeable[pair.evicted] && mergeable[pair.kept]);
    EXPECT_TRUE(used.insert(pair.evicted).second && used.insert(pair.kept).second);
    EXPECT_LE(scores[pair.evicted], scores[pair.kept]);
    EXPECT_NEAR(pair.cosine, Cosine(keys, kDim, pair.evicted, pair.kept), 1e-5);
    EXPECT_GE(pair.cosine, 0.5f);
    if (p > 0) {
      EXPECT_LE(pair.cosine, pairs[p - 1].cosine);
    }
  }
}

}  // namespace
}  // namespace kvd::cache_store
