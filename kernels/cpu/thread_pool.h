// A fixed pool of worker threads for data-parallel loops in the CPU kernels.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

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
  // done. One loop at a time: not reentrant, and callers on different threads must not overlap.
  void ParallelFor(int64_t count, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void WorkerLoop(int32_t index);
  void RunShare(int32_t index);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;  // guarded by mu_
  int64_t count_ = 0;                                          // guarded by mu_
  uint64_t generation_ = 0;                                    // guarded by mu_
  int32_t pending_ = 0;                                        // guarded by mu_
  bool stopping_ = false;                                      // guarded by mu_
};

}  // namespace kvd::kernels::cpu
