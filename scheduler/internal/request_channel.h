// The event queue between the scheduler thread (producer) and whoever holds the RequestHandle
// (consumer), plus the consumer's cancel flag. Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "absl/time/time.h"
#include "base/mutex.h"
#include "scheduler/internal/wakeup.h"
#include "scheduler/request.h"

namespace kvd::scheduler::internal {

class RequestChannel {
 public:
  RequestChannel(uint64_t id, std::shared_ptr<Wakeup> wakeup)
      : id_(id), wakeup_(std::move(wakeup)) {}

  uint64_t id() const { return id_; }

  // Thread: scheduler. Queues an event and tells the listener, if any.
  void Push(Event event);
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

  // Thread: any. The next event, waiting up to `timeout`; nullopt on timeout and after the
  // final event was taken.
  std::optional<Event> Next(absl::Duration timeout);
  // Asks the scheduler thread to stop the request within one step.
  void Cancel();
  // True once the final event was taken.
  bool finished() const;
  // `listener` runs on the scheduler thread after each Push (and at once if events are waiting):
  // an asynchronous consumer posts itself a read from it. It must not block.
  void SetListener(std::function<void()> listener);

 private:
  const uint64_t id_;
  const std::shared_ptr<Wakeup> wakeup_;
  std::atomic<bool> cancelled_ = false;
  mutable base::Mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_ ABSL_GUARDED_BY(mu_);
  bool final_taken_ ABSL_GUARDED_BY(mu_) = false;
  std::function<void()> listener_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kvd::scheduler::internal
