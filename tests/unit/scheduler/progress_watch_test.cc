#include "scheduler/progress_watch.h"

#include <gtest/gtest.h>

#include "tests/unit/scheduler/fake_clock.h"

namespace kvd::scheduler::testing {
namespace {

TEST(ProgressWatchTest, StalledCountsFromTheWorkOrTheLastStepAndNeverWhileIdle) {
  FakeClock clock;
  ProgressWatch watch(clock);
  EXPECT_EQ(watch.Stalled(), absl::ZeroDuration());
  clock.Advance(absl::Minutes(10));  // idle for long: not stalled
  EXPECT_EQ(watch.Stalled(), absl::ZeroDuration());

  watch.Busy();
  clock.Advance(absl::Seconds(3));
  EXPECT_EQ(watch.Stalled(), absl::Seconds(3));
  watch.Busy();  // still the same wait
  clock.Advance(absl::Seconds(2));
  EXPECT_EQ(watch.Stalled(), absl::Seconds(5));

  watch.Stepped();
  EXPECT_EQ(watch.Stalled(), absl::ZeroDuration());
  clock.Advance(absl::Seconds(7));
  EXPECT_EQ(watch.Stalled(), absl::Seconds(7));

  watch.Idle();
  clock.Advance(absl::Hours(1));
  EXPECT_EQ(watch.Stalled(), absl::ZeroDuration());
  watch.Busy();  // work again: a new wait
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(watch.Stalled(), absl::Seconds(1));
}

}  // namespace
}  // namespace kvd::scheduler::testing
