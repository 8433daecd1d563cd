#include "scheduler/internal/request_channel.h"

#include "absl/time/clock.h"
#include "base/mutex.h"

namespace kvd::scheduler::internal {

void RequestChannel::Push(Event event) {
  std::function<void()> listener;
  {
    base::MutexLock lock(mu_);
    events_.push_back(std::move(event));
    listener = listener_;
  }
  cv_.notify_all();
  if (listener) listener();
}

std::optional<Event> RequestChannel::Next(absl::Duration timeout) {
  base::MutexLock lock(mu_);
  const absl::Time deadline = absl::Now() + timeout;  // infinite stays infinite
  while (!final_taken_ && events_.empty()) {
    if (!lock.WaitUntil(cv_, deadline) && !final_taken_ && events_.empty()) return std::nullopt;
  }
  if (final_taken_) return std::nullopt;
  Event event = std::move(events_.front());
  events_.pop_front();
  if (event.final) final_taken_ = true;
  return event;
}

void RequestChannel::Cancel() {
  if (!cancelled_.exchange(true, std::memory_order_acq_rel)) wakeup_->Notify();
}

bool RequestChannel::finished() const {
  base::MutexLock lock(mu_);
  return final_taken_;
}

void RequestChannel::SetListener(std::function<void()> listener) {
  bool events_waiting;
  {
    base::MutexLock lock(mu_);
    listener_ = listener;
    events_waiting = !events_.empty();
  }
  if (events_waiting && listener) listener();
}

}  // namespace kvd::scheduler::internal
