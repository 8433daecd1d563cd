#include "kernels/cpu/thread_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>

namespace kvd::kernels::cpu {
namespace {

// Chunks per thread: enough for the running threads to absorb a late one's share.
constexpr int64_t kChunksPerThread = 4;

// How long a worker spins for the next loop, and the caller for the workers' last chunks,
// before sleeping on a condition variable. The loops of one forward step follow each other
// within microseconds, while waking a sleeping thread took about 20 us on a 2-vCPU VM
// (docs/benchmarks.md, "Thread hand-offs that spin").
constexpr auto kSpinTime = std::chrono::microseconds(50);

}  // namespace

ThreadPool::ThreadPool(int32_t num_threads) {
  for (int32_t i = 1; i < std::max(num_threads, 1); ++i) {
    workers_.emplace_back([this] { WorkerLoop(); });
  }
}

ThreadPool::~ThreadPool() {
  {
    base::MutexLock lock(mu_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (auto& worker : workers_) worker.join();
}

bool ThreadPool::RunChunks(Task& task) {
  bool finished_last = false;
  while (true) {
    const int64_t chunk = task.next_chunk.fetch_add(1, std::memory_order_relaxed);
    if (chunk >= task.num_chunks) return finished_last;
    const int64_t begin = task.count * chunk / task.num_chunks;
    const int64_t end = task.count * (chunk + 1) / task.num_chunks;
    (*task.fn)(begin, end);
    finished_last = task.done_chunks.fetch_add(1, std::memory_order_acq_rel) + 1 == task.num_chunks;
  }
}

template <class Done>
void ThreadPool::SpinUntil(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    for (int i = 0; i < 16; ++i) _mm_pause();
  }
}

void ThreadPool::ParallelFor(int64_t count, const std::function<void(int64_t, int64_t)>& fn) {
  if (count <= 0) return;
  if (workers_.empty() || count == 1) {
    fn(0, count);
    return;
  }
  auto task = std::make_shared<Task>();
  task->fn = &fn;
  task->count = count;
  task->num_chunks = std::min<int64_t>(count, num_threads() * kChunksPerThread);
  {
    base::MutexLock lock(mu_);
    task_ = task;
    ++generation_;
    published_generation_.store(generation_, std::memory_order_release);
  }
  work_ready_.notify_all();
  RunChunks(*task);
  // Wait only for chunks that workers claimed and are still running.
  const auto all_done = [&] {
    return task->done_chunks.load(std::memory_order_acquire) == task->num_chunks;
  };
  SpinUntil(all_done);
  base::MutexLock lock(mu_);
  while (task->done_chunks.load(std::memory_order_acquire) != task->num_chunks) {
    lock.Wait(work_done_);
  }
  task_.reset();
}

void ThreadPool::WorkerLoop() {
  uint64_t seen_generation = 0;
  while (true) {
    SpinUntil(
        [&] { return published_generation_.load(std::memory_order_acquire) != seen_generation; });
    std::shared_ptr<Task> task;
    {
      base::MutexLock lock(mu_);
      while (!stopping_ && generation_ == seen_generation) lock.Wait(work_ready_);
      if (stopping_) return;
      seen_generation = generation_;
      task = task_;
    }
    if (task && RunChunks(*task)) {
      // Take the lock so the notification cannot fall between the caller's check and wait.
      { base::MutexLock lock(mu_); }
      work_done_.notify_all();
    }
  }
}

}  // namespace kvd::kernels::cpu
