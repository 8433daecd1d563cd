// Worker threads shared by many owners (tenants): queued tasks are taken from the owners in
// turn, so one owner's backlog never delays another owner's next task, and each owner may have
// only so many tasks queued or running at once. The threads may run at a lower CPU priority
// than the rest of the process, so that their work yields the cores to the model's.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace kvd::base {

class FairWorkers {
 public:
  struct Options {
    int32_t threads = 1;  // at least 1
    // Tasks one owner may have queued or running; 0: no limit.
    int32_t max_pending_per_owner = 0;
    // The threads' nice value (Linux: 0 is the process's default, 19 the lowest priority);
    // raising it needs no privilege.
    int32_t nice = 0;
  };

  enum class PostResult {
    kPosted,
    kOwnerFull,  // `owner` has max_pending_per_owner tasks queued or running
    kStopped,    // Stop began
  };

  explicit FairWorkers(const Options& options);
  // Stop().
  ~FairWorkers();
  FairWorkers(const FairWorkers&) = delete;
  FairWorkers& operator=(const FairWorkers&) = delete;

  // Queues `task` for `owner`; it is dropped unless the result is kPosted.
  PostResult Post(const std::string& owner, std::function<void()> task);
  // Tasks queued or running for `owner`.
  int32_t pending(const std::string& owner) const;
  // Runs what was posted, then joins the threads. Idempotent.
  void Stop();

 private:
  struct Owner {
    std::deque<std::function<void()>> queued;
    int32_t running = 0;
  };

  void Run();
  // The next task, taken from the owner after the one served last; false when none is queued.
  bool TakeNext(std::function<void()>& task, std::string& owner) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Owner> owners_ ABSL_GUARDED_BY(mu_);  // owners with tasks pending
  std::string last_served_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace kvd::base
