// Wakes the scheduler thread when there is something new for it: a submitted request, a
// cancellation, or a stop. Shared by the scheduler and every request's channel.
#pragma once

#include <condition_variable>
#include <mutex>

namespace kvd::scheduler::internal {

class Wakeup {
 public:
  void Notify() {
    {
      std::lock_guard lock(mu_);
      pending_ = true;
    }
    cv_.notify_one();
  }

  // Blocks until Notify was called since the last Wait returned.
  void Wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return pending_; });
    pending_ = false;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool pending_ = false;
};

}  // namespace kvd::scheduler::internal
