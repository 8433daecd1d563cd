// SignalWatch: a signal reaches Next whichever thread it interrupts, and one that comes after the
// watch is gone (a stop request while the process tears down) does not kill the process.
#include "server/cli/signal_watch.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <thread>

namespace kvd::server {
namespace {

TEST(SignalWatchTest, DeliversSignalsRaisedOnAnyThread) {
  auto watch = SignalWatch::Install();
  ASSERT_TRUE(watch.ok()) << watch.status();
  EXPECT_EQ((*watch)->Next(absl::Milliseconds(1)), 0);
  std::thread([] { raise(SIGHUP); }).join();
  EXPECT_EQ((*watch)->Next(absl::Seconds(10)), SIGHUP);
  EXPECT_FALSE(SignalWatch::Install().ok()) << "one watch per process";
}

TEST(SignalWatchTest, SignalsAfterTheWatchDoNotKillTheProcess) {
  EXPECT_EXIT(
      {
        { auto watch = SignalWatch::Install(); }
        raise(SIGTERM);
        raise(SIGINT);
        std::exit(7);
      },
      ::testing::ExitedWithCode(7), "");
}

}  // namespace
}  // namespace kvd::server
