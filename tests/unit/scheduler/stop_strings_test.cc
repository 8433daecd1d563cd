#include "scheduler/internal/stop_strings.h"

#include <gtest/gtest.h>

namespace kvd::scheduler::internal {
namespace {

TEST(StopStringMatcherTest, HoldsBackAPossibleStartAndReleasesItWhenItIsNot) {
  StopStringMatcher matcher({"STOP"});
  auto result = matcher.Push("abc ST");
  EXPECT_EQ(result.released, "abc ");
  EXPECT_FALSE(result.matched);
  result = matcher.Push("AR");
  EXPECT_EQ(result.released, "STAR");
  EXPECT_FALSE(result.matched);
}

TEST(StopStringMatcherTest, MatchAcrossPiecesCutsBeforeTheStop) {
  StopStringMatcher matcher({"END", "STOP"});
  EXPECT_EQ(matcher.Push("one S").released, "one ");
  EXPECT_EQ(matcher.Push("T").released, "");
  const auto result = matcher.Push("OP and more");
  EXPECT_EQ(result.released, "");
  ASSERT_TRUE(result.matched);
  EXPECT_EQ(*result.matched, 1u);
}

TEST(StopStringMatcherTest, EarliestMatchWins) {
  StopStringMatcher matcher({"cd", "b"});
  const auto result = matcher.Push("abcd");
  EXPECT_EQ(result.released, "a");
  EXPECT_EQ(*result.matched, 1u);
}

TEST(StopStringMatcherTest, WithoutMatchingEverythingIsReleased) {
  StopStringMatcher matcher({"xy"});
  EXPECT_EQ(matcher.Push("ax").released, "a");
  EXPECT_EQ(matcher.Push("y", /*match=*/false).released, "xy");
  EXPECT_EQ(matcher.Flush(), "");
}

TEST(StopStringMatcherTest, FlushReleasesTheHeldTail) {
  StopStringMatcher matcher({"<|im_end|>"});
  EXPECT_EQ(matcher.Push("answer<|im").released, "answer");
  EXPECT_EQ(matcher.Flush(), "<|im");
}

TEST(StopStringMatcherTest, NoStopsReleasesAtOnce) {
  StopStringMatcher matcher({});
  EXPECT_EQ(matcher.Push("text").released, "text");
}

}  // namespace
}  // namespace kvd::scheduler::internal
