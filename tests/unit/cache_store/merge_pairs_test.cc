// KeepKV's merge selection. Similar pairs: disjoint, most similar first, the lower score
// evicted, protected entries never touched, the similarity floor and pair cap honoured. Lowest
// scores: exactly the lowest go, in ascending score, each into the most similar entry still
// there (chains carrying a group's votes to its last member) or evicted without one. Both find
// the partner a brute-force search in double precision finds, at sizes past any vector width.
#include "cache_store/keepkv/merge_pairs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <utility>

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

// `count` entries of `dim` normal keys, absolute normal scores, every `protect_every`-th entry
// not mergeable.
struct RandomEntries {
  std::vector<float> keys, scores;
  std::vector<uint8_t> mergeable;
};
RandomEntries MakeRandomEntries(uint32_t seed, int32_t count, int32_t dim, int32_t protect_every) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal;
  RandomEntries entries{std::vector<float>(static_cast<size_t>(count) * dim),
                        std::vector<float>(count), std::vector<uint8_t>(count, 1)};
  for (float& x : entries.keys) x = normal(random);
  for (float& x : entries.scores) x = std::abs(normal(random));
  for (int32_t i = 0; i < count; i += protect_every) entries.mergeable[i] = 0;
  return entries;
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

TEST(SelectLowestScoredMerges, FoldsInAscendingScoreIntoTheMostSimilarEntryStillThere) {
  // Two groups of one direction each, {0, 1, 2} along x and {3, 4} along y, and 5 along z.
  const std::vector<float> keys = {1, 0, 0, 2, 0.1f, 0, 1, 0, 0.01f, 0, 1, 0, 0, 2, 0, 0, 0, 1};
  const std::vector<uint8_t> mergeable = {1, 1, 1, 1, 1, 1};
  const std::vector<float> scores = {0.1f, 0.3f, 0.2f, 0.05f, 0.6f, 0.4f};
  const auto merges = SelectLowestScoredMerges(keys, keys, 3, mergeable, scores, 3, 0.8f, -1.0f);
  ASSERT_EQ(merges.size(), 3u);
  // 3 (0.05) into 4; 0 (0.1) into 2, its closest; 2 (0.2) then into 1, carrying 0.
  EXPECT_EQ(merges[0].evicted, 3);
  EXPECT_EQ(merges[0].kept, 4);
  EXPECT_EQ(merges[1].evicted, 0);
  EXPECT_EQ(merges[1].kept, 2);
  EXPECT_EQ(merges[2].evicted, 2);
  EXPECT_EQ(merges[2].kept, 1);
  EXPECT_NEAR(merges[2].cosine, Cosine(keys, 3, 2, 1), 1e-6);
}

TEST(SelectLowestScoredMerges, TheLowestGoEvenWithoutAPartner) {
  // Three orthogonal keys and a pair: only the pair can merge.
  const std::vector<float> keys = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0.1f, 1};
  const std::vector<uint8_t> mergeable = {1, 1, 1, 1};
  const std::vector<float> scores = {0.1f, 0.2f, 0.3f, 0.4f};
  const auto merges = SelectLowestScoredMerges(keys, keys, 3, mergeable, scores, 3, 0.8f, -1.0f);
  ASSERT_EQ(merges.size(), 3u);
  EXPECT_EQ(merges[0].evicted, 0);  // no partner: evicted
  EXPECT_EQ(merges[0].kept, -1);
  EXPECT_EQ(merges[1].evicted, 1);
  EXPECT_EQ(merges[1].kept, -1);
  EXPECT_EQ(merges[2].evicted, 2);  // folds into 3, the one left
  EXPECT_EQ(merges[2].kept, 3);
}

TEST(SelectLowestScoredMerges, AValueGateSendsAnEntryToItsClosestKeyAmongSimilarValues) {
  // Keys: 1 is the closest to 0, then 2; values: 0's is 2's direction, not 1's; 3's value is
  // like no other.
  const std::vector<float> keys = {1, 0, 0, 1, 0.1f, 0, 1, 0.3f, 0, 1, 0.2f, 0};
  const std::vector<float> values = {1, 0, 0, 0, 1, 0, 1, 0.1f, 0, 0, 0, 1};
  const std::vector<uint8_t> mergeable = {1, 1, 1, 1};
  const std::vector<float> scores = {0.1f, 0.5f, 0.6f, 0.2f};
  const auto ungated = SelectLowestScoredMerges(keys, values, 3, mergeable, scores, 2, 0.8f, -1.0f);
  ASSERT_EQ(ungated.size(), 2u);
  EXPECT_EQ(ungated[0].kept, 1);  // the closest key, whatever its value
  const auto gated = SelectLowestScoredMerges(keys, values, 3, mergeable, scores, 2, 0.8f, 0.8f);
  ASSERT_EQ(gated.size(), 2u);
  EXPECT_EQ(gated[0].evicted, 0);
  EXPECT_EQ(gated[0].kept, 2);  // the closest key among similar values
  EXPECT_EQ(gated[1].evicted, 3);
  EXPECT_EQ(gated[1].kept, -1);  // no similar value: evicted
}

TEST(SelectLowestScoredMerges, NeverTouchesProtectedEntries) {
  constexpr int32_t kDim = 8;
  constexpr int32_t kCount = 60;
  const auto [keys, scores, mergeable] =
      MakeRandomEntries(std::random_device{}(), kCount, kDim, /*protect_every=*/3);
  const auto merges =
      SelectLowestScoredMerges(keys, keys, kDim, mergeable, scores, 30, 0.3f, -1.0f);
  EXPECT_EQ(merges.size(), 30u);
  std::set<int32_t> gone;
  for (const MergePair& merge : merges) {
    EXPECT_TRUE(mergeable[merge.evicted]) << merge.evicted;
    if (merge.kept >= 0) {
      EXPECT_TRUE(mergeable[merge.kept]) << merge.kept;
      EXPECT_FALSE(gone.count(merge.kept)) << "folded into an entry already gone";
      EXPECT_GE(merge.cosine, 0.3f);
    }
    EXPECT_TRUE(gone.insert(merge.evicted).second);
  }
}

// Random keys of a width no vector divides, with protected entries among them: every selected
// entry goes to the entry still there whose key a double-precision cosine ranks first.
TEST(SelectLowestScoredMerges, ChoosesThePartnerABruteForceSearchChooses) {
  constexpr int32_t kDim = 23;
  constexpr int32_t kCount = 301;
  constexpr int32_t kSelected = 250;
  const auto [keys, scores, mergeable] = MakeRandomEntries(7, kCount, kDim, /*protect_every=*/7);
  const auto merges =
      SelectLowestScoredMerges(keys, keys, kDim, mergeable, scores, kSelected, -1.0f, -1.0f);
  ASSERT_EQ(merges.size(), static_cast<size_t>(kSelected));
  std::vector<uint8_t> alive = mergeable;
  for (const MergePair& merge : merges) {
    alive[merge.evicted] = 0;
    int32_t best = -1;
    double best_cosine = -2.0;
    for (int32_t j = 0; j < kCount; ++j) {
      if (!alive[j]) continue;
      const double cosine = Cosine(keys, kDim, merge.evicted, j);
      if (cosine > best_cosine) {
        best = j;
        best_cosine = cosine;
      }
    }
    EXPECT_EQ(merge.kept, best) << "entry " << merge.evicted;
    EXPECT_NEAR(merge.cosine, best_cosine, 1e-5);
  }
}

TEST(SelectMergePairs, TheFirstPairIsTheMostSimilarOfAllAsABruteForceSearchFindsIt) {
  constexpr int32_t kDim = 37;
  constexpr int32_t kCount = 203;
  const auto [keys, scores, mergeable] = MakeRandomEntries(11, kCount, kDim, /*protect_every=*/5);
  const auto pairs =
      SelectMergePairs(keys, kDim, mergeable, scores, {.max_pairs = 1, .min_cosine = -1.0f});
  ASSERT_EQ(pairs.size(), 1u);
  std::pair<int32_t, int32_t> best{-1, -1};
  double best_cosine = -2.0;
  for (int32_t a = 0; a < kCount; ++a) {
    for (int32_t b = a + 1; b < kCount; ++b) {
      if (!mergeable[a] || !mergeable[b]) continue;
      const double cosine = Cosine(keys, kDim, a, b);
      if (cosine > best_cosine) {
        best = {a, b};
        best_cosine = cosine;
      }
    }
  }
  const auto [low, high] = std::minmax(pairs[0].evicted, pairs[0].kept);
  EXPECT_EQ(low, best.first);
  EXPECT_EQ(high, best.second);
  EXPECT_NEAR(pairs[0].cosine, best_cosine, 1e-5);
}

}  // namespace
}  // namespace kvd::cache_store
