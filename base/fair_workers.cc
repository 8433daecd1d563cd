#include "base/fair_workers.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <utility>

#include "base/check.h"

namespace kvd::base {

FairWorkers::FairWorkers(const Options& options) : options_(options) {
  KVD_CHECK(options.threads >= 1);
  KVD_CHECK(options.max_pending_per_owner >= 0);
  for (int32_t i = 0; i < options.threads; ++i) threads_.emplace_back([this] { Run(); });
}

FairWorkers::~FairWorkers() { Stop(); }

FairWorkers::PostResult FairWorkers::Post(const std::string& owner, std::function<void()> task) {
  {
    MutexLock lock(mu_);
    if (stopping_) return PostResult::kStopped;
    Owner& pending = owners_[owner];
    if (options_.max_pending_per_owner > 0 &&
        std::ssize(pending.queued) + pending.running >= options_.max_pending_per_owner) {
      return PostResult::kOwnerFull;
    }
    pending.queued.push_back(std::move(task));
  }
  cv_.notify_one();
  return PostResult::kPosted;
}

int32_t FairWorkers::pending(const std::string& owner) const {
  MutexLock lock(mu_);
  const auto it = owners_.find(owner);
  return it == owners_.end() ? 0
                             : static_cast<int32_t>(it->second.queued.size()) + it->second.running;
}

void FairWorkers::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

bool FairWorkers::TakeNext(std::function<void()>& task, std::string& owner) {
  // Owners in name order, starting after the last one served and wrapping around.
  auto it = owners_.upper_bound(last_served_);
  for (size_t visited = 0; visited < owners_.size(); ++visited, ++it) {
    if (it == owners_.end()) it = owners_.begin();
    if (it->second.queued.empty()) continue;
    task = std::move(it->second.queued.front());
    it->second.queued.pop_front();
    ++it->second.running;
    owner = it->first;
    last_served_ = it->first;
    return true;
  }
  return false;
}

void FairWorkers::Run() {
  if (options_.nice != 0) {
    // Per thread on Linux; a refusal leaves the thread at the process's priority.
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), options_.nice);
  }
  while (true) {
    std::function<void()> task;
    std::string owner;
    {
      MutexLock lock(mu_);
      while (!TakeNext(task, owner)) {
        if (stopping_) return;  // and everything posted ran
        lock.Wait(cv_);
      }
    }
    task();
    task = nullptr;  // what it holds goes before the owner's count does
    MutexLock lock(mu_);
    Owner& done = owners_[owner];
    --done.running;
    if (done.running == 0 && done.queued.empty()) owners_.erase(owner);
  }
}

}  // namespace kvd::base
