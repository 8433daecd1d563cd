// Whether the scheduler thread moves: how long it has had work without completing a step. A
// replica whose thread is wedged (a kernel that never returns, a lock never released) turns
// /health unhealthy with it, so that Kubernetes restarts it rather than routing to it.
#pragma once

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"
#include "scheduler/clock.h"

namespace kvd::scheduler {

class ProgressWatch {
 public:
  explicit ProgressWatch(const Clock& clock) : clock_(clock) {}

  // Thread: scheduler. It has work; the wait starts now unless it had work already.
  void Busy();
  // Thread: scheduler. A step completed; the wait starts again.
  void Stepped();
  // Thread: scheduler. Nothing to do: not stalled, however long it waits.
  void Idle();

  // Thread-safe. How long the thread has had work since it last completed a step (or since the
  // work came); zero while it has none.
  absl::Duration Stalled() const;

 private:
  static constexpr int64_t kIdle = INT64_MIN;

  const Clock& clock_;
  // Nanoseconds since the epoch on clock_ of the wait's start; kIdle without work.
  std::atomic<int64_t> waiting_since_ns_ = kIdle;
};

}  // namespace kvd::scheduler
