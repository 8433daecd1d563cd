// DraftAcceptance: poor only on enough evidence of under a tenth kept, recent drafts counting
// most, and good again once drafts are kept.
#include "scheduler/internal/draft_acceptance.h"

#include <gtest/gtest.h>

namespace kvd::scheduler::internal {
namespace {

TEST(DraftAcceptanceTest, PoorOnlyOnEnoughRefusals) {
  DraftAcceptance acceptance;
  EXPECT_FALSE(acceptance.Poor());
  acceptance.Record(4, 0);
  acceptance.Record(3, 0);
  EXPECT_FALSE(acceptance.Poor()) << "7 draft tokens are too few to judge";
  acceptance.Record(1, 0);
  EXPECT_TRUE(acceptance.Poor());
}

TEST(DraftAcceptanceTest, ATenthKeptIsNotPoor) {
  DraftAcceptance acceptance;
  for (int i = 0; i < 10; ++i) acceptance.Record(10, 1);
  EXPECT_FALSE(acceptance.Poor());
  acceptance.Record(10, 0);
  EXPECT_TRUE(acceptance.Poor());
}

TEST(DraftAcceptanceTest, RecentDraftsOutweighOldOnes) {
  DraftAcceptance acceptance;
  for (int i = 0; i < 100; ++i) acceptance.Record(4, 4);  // long good, then all refused:
  for (int i = 0; i < 300; ++i) acceptance.Record(4, 0);  // the good ones fade by halves
  EXPECT_TRUE(acceptance.Poor());
  for (int i = 0; i < 20; ++i) acceptance.Record(4, 2);  // and half kept again
  EXPECT_FALSE(acceptance.Poor());
}

}  // namespace
}  // namespace kvd::scheduler::internal
