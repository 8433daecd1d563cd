#include "kernels/cpu/thread_pool.h"

#include <algorithm>

namespace kvd::kernels::cpu {

ThreadPool::ThreadPool(int32_t num_threads) {
  for (int32_t i = 1; i < std::max(num_threads, 1); ++i) {
    workers_.emplace_back([this, i] { WorkerLoop(i); });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::RunShare(int32_t index) {
  const int64_t shares = num_threads();
  const int64_t begin = count_ * index / shares;
  const int64_t end = count_ * (index + 1) / shares;
  if (begin < end) (*fn_)(begin, end);
}

void ThreadPool::ParallelFor(int64_t count, const std::function<void(int64_t, int64_t)>& fn) {
  if (count <= 0) return;
  if (workers_.empty() || count == 1) {
    fn(0, count);
    return;
  }
  {
    std::lock_guard lock(mu_);
    fn_ = &fn;
    count_ = count;
    pending_ = static_cast<int32_t>(workers_.size());
    ++generation_;
  }
  work_ready_.notify_all();
  RunShare(0);
  std::unique_lock lock(mu_);
  work_done_.wait(lock, [this] { return pending_ == 0; });
  fn_ = nullptr;
}

void ThreadPool::WorkerLoop(int32_t index) {
  uint64_t seen_generation = 0;
  while (true) {
    {
      std::unique_lock lock(mu_);
      work_ready_.wait(lock, [&] { return stopping_ || generation_ != seen_generation; });
      if (stopping_) return;
      seen_generation = generation_;
    }
    RunShare(index);
    {
      std::lock_guard lock(mu_);
      --pending_;
    }
    work_done_.notify_one();
  }
}

}  // namespace kvd::kernels::cpu
