#include "documents/request_workers.h"

#include <utility>

#include "base/check.h"

namespace kvd::documents {

RequestWorkers::RequestWorkers(int threads) {
  KVD_CHECK(threads >= 1);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
}

RequestWorkers::~RequestWorkers() { Stop(); }

bool RequestWorkers::Post(std::function<void()> task) {
  {
    base::MutexLock lock(mu_);
    if (stopping_) return false;
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
  return true;
}

void RequestWorkers::Stop() {
  {
    base::MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

void RequestWorkers::Run() {
  while (true) {
    std::function<void()> task;
    {
      base::MutexLock lock(mu_);
      while (tasks_.empty() && !stopping_) lock.Wait(cv_);
      if (tasks_.empty()) return;  // stopping, and everything posted ran
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace kvd::documents
