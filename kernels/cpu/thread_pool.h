// A fixed pool of worker threads for data-parallel loops in the CPU kernels.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace kvd::kernels::cpu {

class ThreadPool {
 public:
  // num_threads counts the calling thread, which always takes part; 1 means no workers.
  explicit ThreadPool(int32_t num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int32_t num_threads() const { return static_cast<int32_t>(workers_.size()) + 1; }

  // Calls fn(begin, end) over disjoint ranges covering [0, count) and returns when all are
  // done. The ranges are claimed dynamically, so a worker the OS has not scheduled yet delays
  // nothing: the threads that run take its share. Workers spin a while after each loop before
  // they sleep, so loops that follow each other closely hand off without a wake-up. One loop at
  // a time: not reentrant, and callers on different threads must not overlap.
  void ParallelFor(int64_t count, const std::function<void(int64_t, int64_t)>& fn);

 private:
  // One ParallelFor call. Workers hold it by shared_ptr, so one that wakes after the call
  // returned finds every chunk claimed and never touches `fn`.
  struct Task {
    const std::function<void(int64_t, int64_t)>* fn = nullptr;
    int64_t count = 0;
    int64_t num_chunks = 0;
    std::atomic<int64_t> next_chunk = 0;
    std::atomic<int64_t> done_chunks = 0;
  };

  void WorkerLoop();
  // Runs chunks of `task` until none is left; true if this call finished the last one.
  static bool RunChunks(Task& task);
  // Spins until `done` holds or the spin time is up.
  template <class Done>
  static void SpinUntil(Done done);

  std::vector<std::thread> workers_;
  base::Mutex mu_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  std::shared_ptr<Task> task_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  // generation_, readable without the lock by workers that spin for the next loop.
  std::atomic<uint64_t> published_generation_ = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace kvd::kernels::cpu
