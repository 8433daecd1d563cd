#include "kernels/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace kvd::kernels::cpu {
namespace {

TEST(ThreadPoolTest, CoversEveryIndexExactlyOnce) {
  ThreadPool pool(3);
  for (int64_t count : {0, 1, 2, 7, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
    pool.ParallelFor(count, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
    });
    for (int64_t i = 0; i < count; ++i) EXPECT_EQ(hits[i].load(), 1) << count << " " << i;
  }
}

TEST(ThreadPoolTest, RunsManyLoopsInSequence) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  for (int round = 0; round < 200; ++round) {
    pool.ParallelFor(10, [&](int64_t begin, int64_t end) { total += end - begin; });
  }
  EXPECT_EQ(total.load(), 2000);
}

TEST(ThreadPoolTest, WorkersTakePartBackToBackAndAfterFallingAsleep) {
  ThreadPool pool(2);
  const auto caller = std::this_thread::get_id();
  for (int round = 0; round < 40; ++round) {
    // Odd rounds come after the workers stopped spinning and went to sleep; even ones find them
    // spinning for the next loop.
    if (round % 2 == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::atomic<int> started{0};
    std::atomic<bool> worker_ran{false};
    pool.ParallelFor(2, [&](int64_t, int64_t) {
      if (std::this_thread::get_id() != caller) worker_ran = true;
      started.fetch_add(1);
      // No chunk ends before both have started, which the caller alone cannot do: the other
      // chunk must be a worker's (the deadline only bounds a broken pool).
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (started.load() < 2 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
      }
    });
    EXPECT_TRUE(worker_ran) << "round " << round;
    EXPECT_EQ(started.load(), 2) << "round " << round;
  }
}

}  // namespace
}  // namespace kvd::kernels::cpu
