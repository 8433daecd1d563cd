// A clock that moves only when a test says so; a scheduler thread may read it while the test
// moves it.
#pragma once

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"
#include "scheduler/clock.h"

namespace kvd::scheduler::testing {

class FakeClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::FromUnixNanos(now_ns_.load()); }
  void Advance(absl::Duration duration) { now_ns_ += absl::ToInt64Nanoseconds(duration); }

 private:
  std::atomic<int64_t> now_ns_ = 0;
};

}  // namespace kvd::scheduler::testing
