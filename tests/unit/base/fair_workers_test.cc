#include "base/fair_workers.h"

#include <atomic>
#include <condition_variable>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "gtest/gtest.h"

namespace kvd::base {
namespace {

// Holds the one worker until released, so that what is posted meanwhile queues up.
class Gate {
 public:
  void Wait() {
    MutexLock lock(mu_);
    entered_ = true;
    entered_cv_.notify_all();
    while (!open_) lock.Wait(cv_);
  }
  void AwaitEntered() {
    MutexLock lock(mu_);
    while (!entered_) lock.Wait(entered_cv_);
  }
  void Open() {
    {
      MutexLock lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }

 private:
  Mutex mu_;
  std::condition_variable cv_, entered_cv_;
  bool entered_ ABSL_GUARDED_BY(mu_) = false;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
};

TEST(FairWorkersTest, OwnersTakeTurnsWhateverTheirBacklog) {
  FairWorkers workers({.threads = 1});
  Gate gate;
  Mutex mu;
  std::vector<std::string> order;
  ASSERT_EQ(workers.Post("a", [&] { gate.Wait(); }), FairWorkers::PostResult::kPosted);
  gate.AwaitEntered();
  auto record = [&](std::string name) {
    return [&, name] {
      MutexLock lock(mu);
      order.push_back(name);
    };
  };
  // "a" floods before "b" and "c" post once each.
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(workers.Post("a", record("a")), FairWorkers::PostResult::kPosted);
  ASSERT_EQ(workers.Post("b", record("b")), FairWorkers::PostResult::kPosted);
  ASSERT_EQ(workers.Post("c", record("c")), FairWorkers::PostResult::kPosted);
  gate.Open();
  workers.Stop();
  // The gate's task was "a"'s: "b" goes next, then "c", then "a" again.
  EXPECT_EQ(order, (std::vector<std::string>{"b", "c", "a", "a", "a", "a"}));
}

TEST(FairWorkersTest, AnOwnerPastItsLimitIsRefusedAndOthersAreNot) {
  FairWorkers workers({.threads = 1, .max_pending_per_owner = 2});
  Gate gate;
  std::atomic<int> ran = 0;
  ASSERT_EQ(workers.Post("a", [&] { gate.Wait(); }), FairWorkers::PostResult::kPosted);
  gate.AwaitEntered();
  EXPECT_EQ(workers.Post("a", [&] { ++ran; }), FairWorkers::PostResult::kPosted);
  EXPECT_EQ(workers.pending("a"), 2);  // one running, one queued
  EXPECT_EQ(workers.Post("a", [&] { ++ran; }), FairWorkers::PostResult::kOwnerFull);
  EXPECT_EQ(workers.Post("b", [&] { ++ran; }), FairWorkers::PostResult::kPosted);
  gate.Open();
  workers.Stop();
  EXPECT_EQ(ran.load(), 2);
  EXPECT_EQ(workers.pending("a"), 0);
  EXPECT_EQ(workers.Post("a", [&] { ++ran; }), FairWorkers::PostResult::kStopped);
}

TEST(FairWorkersTest, StopRunsEverythingPosted) {
  std::atomic<int> ran = 0;
  {
    FairWorkers workers({.threads = 2, .nice = 10});
    for (int i = 0; i < 100; ++i) {
      ASSERT_EQ(workers.Post(std::to_string(i % 7), [&] { ++ran; }),
                FairWorkers::PostResult::kPosted);
    }
  }
  EXPECT_EQ(ran.load(), 100);
}

}  // namespace
}  // namespace kvd::base
