#include "scheduler/internal/ngram_drafter.h"

#include <gtest/gtest.h>

#include <vector>

namespace kvd::scheduler::internal {
namespace {

using Tokens = std::vector<int32_t>;

TEST(NgramDrafterTest, TheLongestMatchWinsAndItsLatestOccurrence) {
  // "7 8 9" occurred twice before the end; the latest is followed by 40 41.
  const Tokens context = {7, 8, 9, 10, 11, 5, 8, 9, 30, 31, 7, 8, 9, 40, 41, 2, 7, 8, 9};
  EXPECT_EQ(ProposeNgramDraft(context, {}, {.min_n = 1, .max_n = 3}, 2), (Tokens{40, 41}));
  // With n at most 2, "8 9" matches too, latest at index 11.
  EXPECT_EQ(ProposeNgramDraft(context, {}, {.min_n = 1, .max_n = 2}, 5), (Tokens{40, 41, 2, 7, 8}));
}

TEST(NgramDrafterTest, ADraftStopsAtTheEndOfWhatIsKnown) {
  const Tokens context = {1, 2, 3, 1, 2};
  EXPECT_EQ(ProposeNgramDraft(context, {}, {.min_n = 2, .max_n = 2}, 8), (Tokens{3, 1, 2}));
}

TEST(NgramDrafterTest, TheDocumentIsSearchedWhenTheContextHasNoMatch) {
  const Tokens document = {50, 60, 70, 80, 90, 60, 70, 81};
  const Tokens question = {3, 4, 60, 70};
  // The first occurrence in the document.
  EXPECT_EQ(ProposeNgramDraft(question, document, {.min_n = 1, .max_n = 3}, 3),
            (Tokens{80, 90, 60}));
  // A longer match in the document beats a shorter one in the context.
  const Tokens context = {70, 5, 60, 70};
  EXPECT_EQ(ProposeNgramDraft(context, document, {.min_n = 1, .max_n = 2}, 1), (Tokens{80}));
  // One token matched: in the document it counts, in the sequence's own tokens it does not.
  EXPECT_EQ(ProposeNgramDraft(Tokens{1, 2, 90}, document, {.min_n = 1, .max_n = 2}, 2),
            (Tokens{60, 70}));
  EXPECT_TRUE(ProposeNgramDraft(context, {}, {.min_n = 1, .max_n = 2}, 1).empty());
}

TEST(NgramDrafterTest, NothingIsProposedWithoutAMatchOrRoom) {
  EXPECT_TRUE(ProposeNgramDraft(Tokens{1, 2, 3, 4}, {}, {.min_n = 1, .max_n = 3}, 4).empty());
  EXPECT_TRUE(ProposeNgramDraft(Tokens{1, 2, 1, 2}, {}, {.min_n = 1, .max_n = 2}, 0).empty());
  EXPECT_TRUE(ProposeNgramDraft(Tokens{}, Tokens{1, 2}, {.min_n = 1, .max_n = 2}, 4).empty());
  // A match at the very end of the document has nothing after it.
  EXPECT_TRUE(ProposeNgramDraft(Tokens{9, 2}, Tokens{1, 2}, {.min_n = 1, .max_n = 2}, 4).empty());
  // Shorter than min_n matches do not count.
  EXPECT_TRUE(ProposeNgramDraft(Tokens{5, 1, 6, 1}, {}, {.min_n = 2, .max_n = 3}, 4).empty());
  EXPECT_TRUE(
      ProposeNgramDraft(Tokens{5, 1, 6, 1}, Tokens{6, 1, 7}, {.min_n = 3, .max_n = 3}, 4).empty());
}

}  // namespace
}  // namespace kvd::scheduler::internal
