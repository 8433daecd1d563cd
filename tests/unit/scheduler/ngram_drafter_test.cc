#include "scheduler/internal/ngram_drafter.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <random>
#include <vector>

namespace kvd::scheduler::internal {
namespace {

using Tokens = std::vector<int32_t>;

// `tokens` as a stored document's ids, indexed for `lookup`.
DocumentNgrams Document(const Tokens& tokens, NgramLookup lookup) {
  return DocumentNgrams(tokens, lookup);
}

TEST(NgramDrafterTest, TheLongestMatchWinsAndItsLatestOccurrence) {
  // "7 8 9" occurred twice before the end; the latest is followed by 40 41.
  const Tokens context = {7, 8, 9, 10, 11, 5, 8, 9, 30, 31, 7, 8, 9, 40, 41, 2, 7, 8, 9};
  EXPECT_EQ(ProposeNgramDraft(context, nullptr, {.min_n = 1, .max_n = 3}, 2), (Tokens{40, 41}));
  // With n at most 2, "8 9" matches too, latest at index 11.
  EXPECT_EQ(ProposeNgramDraft(context, nullptr, {.min_n = 1, .max_n = 2}, 5),
            (Tokens{40, 41, 2, 7, 8}));
}

TEST(NgramDrafterTest, ADraftStopsAtTheEndOfWhatIsKnown) {
  const Tokens context = {1, 2, 3, 1, 2};
  EXPECT_EQ(ProposeNgramDraft(context, nullptr, {.min_n = 2, .max_n = 2}, 8), (Tokens{3, 1, 2}));
}

TEST(NgramDrafterTest, TheDocumentIsSearchedWhenTheContextHasNoMatch) {
  const NgramLookup up_to_3 = {.min_n = 1, .max_n = 3};
  const NgramLookup up_to_2 = {.min_n = 1, .max_n = 2};
  const DocumentNgrams document = Document({50, 60, 70, 80, 90, 60, 70, 81}, up_to_3);
  const Tokens question = {3, 4, 60, 70};
  // The first occurrence in the document.
  EXPECT_EQ(ProposeNgramDraft(question, &document, up_to_3, 3), (Tokens{80, 90, 60}));
  // A longer match in the document beats a shorter one in the context.
  const DocumentNgrams two = Document({50, 60, 70, 80, 90, 60, 70, 81}, up_to_2);
  const Tokens context = {70, 5, 60, 70};
  EXPECT_EQ(ProposeNgramDraft(context, &two, up_to_2, 1), (Tokens{80}));
  // One token matched: in the document it counts, in the sequence's own tokens it does not.
  EXPECT_EQ(ProposeNgramDraft(Tokens{1, 2, 90}, &two, up_to_2, 2), (Tokens{60, 70}));
  EXPECT_TRUE(ProposeNgramDraft(context, nullptr, up_to_2, 1).empty());
}

TEST(NgramDrafterTest, NothingIsProposedWithoutAMatchOrRoom) {
  const NgramLookup up_to_2 = {.min_n = 1, .max_n = 2};
  EXPECT_TRUE(ProposeNgramDraft(Tokens{1, 2, 3, 4}, nullptr, {.min_n = 1, .max_n = 3}, 4).empty());
  EXPECT_TRUE(ProposeNgramDraft(Tokens{1, 2, 1, 2}, nullptr, up_to_2, 0).empty());
  const DocumentNgrams short_document = Document({1, 2}, up_to_2);
  EXPECT_TRUE(ProposeNgramDraft(Tokens{}, &short_document, up_to_2, 4).empty());
  // A match at the very end of the document has nothing after it.
  EXPECT_TRUE(ProposeNgramDraft(Tokens{9, 2}, &short_document, up_to_2, 4).empty());
  // Shorter than min_n matches do not count.
  const NgramLookup only_3 = {.min_n = 3, .max_n = 3};
  EXPECT_TRUE(ProposeNgramDraft(Tokens{5, 1, 6, 1}, nullptr, {.min_n = 2, .max_n = 3}, 4).empty());
  const DocumentNgrams document = Document({6, 1, 7}, only_3);
  EXPECT_TRUE(ProposeNgramDraft(Tokens{5, 1, 6, 1}, &document, only_3, 4).empty());
}

// The index finds what a scan of the document finds: the first occurrence of every n-gram that
// has a token after it, and nothing else.
TEST(NgramDrafterTest, TheDocumentsIndexAgreesWithAScan) {
  std::mt19937 random(3);
  std::uniform_int_distribution<int32_t> id(0, 5);
  Tokens tokens(400);
  for (int32_t& token : tokens) token = id(random);
  const NgramLookup lookup = {.min_n = 1, .max_n = 4};
  const DocumentNgrams document = Document(tokens, lookup);
  for (int32_t trial = 0; trial < 500; ++trial) {
    Tokens pattern(static_cast<size_t>(1 + trial % 4));
    for (int32_t& token : pattern) token = id(random);
    std::optional<size_t> scanned;
    for (size_t start = 0; start + pattern.size() < tokens.size() && !scanned; ++start) {
      if (std::equal(pattern.begin(), pattern.end(), tokens.begin() + start)) scanned = start;
    }
    EXPECT_EQ(document.First(pattern), scanned);
  }
  EXPECT_EQ(document.First(Tokens{1, 2, 3, 4, 5}), std::nullopt) << "longer than max_n";
}

}  // namespace
}  // namespace kvd::scheduler::internal
