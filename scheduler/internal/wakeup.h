// Wakes the scheduler thread when there is something new for it: a submitted request, a
// cancellation, or a stop. Shared by the scheduler and every request's channel.
#pragma once

#include <condition_variable>
#include <mutex>

#include "base/mutex.h"

namespace kvd::scheduler::internal {

class Wakeup {
 public:
  void Notify() {
    {
      base::MutexLock lock(mu_);
      pending_ = true;
    }
    cv_.notify_one();
  }

  // Blocks until Notify was called since the last Wait returned.
  void Wait() {
    base::MutexLock lock(mu_);
    while (!pending_) lock.Wait(cv_);
    pending_ = false;
  }

 private:
  base::Mutex mu_;
  std::condition_variable cv_;
  bool pending_ = false;
};

}  // namespace kvd::scheduler::internal
