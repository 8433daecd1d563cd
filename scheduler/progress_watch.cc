#include "scheduler/progress_watch.h"

#include <algorithm>

namespace kvd::scheduler {

void ProgressWatch::Busy() {
  if (waiting_since_ns_.load(std::memory_order_relaxed) == kIdle) Stepped();
}

void ProgressWatch::Stepped() {
  waiting_since_ns_.store(absl::ToUnixNanos(clock_.Now()), std::memory_order_relaxed);
}

void ProgressWatch::Idle() { waiting_since_ns_.store(kIdle, std::memory_order_relaxed); }

absl::Duration ProgressWatch::Stalled() const {
  const int64_t since = waiting_since_ns_.load(std::memory_order_relaxed);
  if (since == kIdle) return absl::ZeroDuration();
  return std::max(absl::ZeroDuration(), clock_.Now() - absl::FromUnixNanos(since));
}

}  // namespace kvd::scheduler
