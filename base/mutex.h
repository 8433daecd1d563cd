// A std::mutex the compiler checks: members marked ABSL_GUARDED_BY(mu_) and functions marked
// ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) are verified by clang's -Wthread-safety (every clang
// build of kvd turns it into an error). A thin wrapper rather than absl::Mutex: Debian's
// prebuilt Abseil is not instrumented for ThreadSanitizer, which then reports false races on
// everything an absl::Mutex guards.
#pragma once

#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"

namespace kvd::base {

class ABSL_LOCKABLE Mutex {
 public:
  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds `mu` for its scope; waits on a condition variable release and retake it, as
// std::unique_lock's do. Wait in a loop over the condition (`while (!ready_) lock.Wait(cv_);`),
// so that the condition is read with the mutex held where the compiler can see it.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : lock_(mu.mu_) {}
  ~MutexLock() ABSL_UNLOCK_FUNCTION() = default;
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Wait(std::condition_variable& cv) { cv.wait(lock_); }
  // False when `deadline` passed first; at absl::InfiniteFuture() it waits as Wait does.
  bool WaitUntil(std::condition_variable& cv, absl::Time deadline) {
    if (deadline == absl::InfiniteFuture()) {
      cv.wait(lock_);
      return true;
    }
    return cv.wait_until(lock_, absl::ToChronoTime(deadline)) == std::cv_status::no_timeout;
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace kvd::base
