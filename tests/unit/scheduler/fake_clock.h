// A clock that moves only when a test says so.
#pragma once

#include "absl/time/time.h"
#include "scheduler/clock.h"

namespace kvd::scheduler::testing {

class FakeClock final : public Clock {
 public:
  absl::Time Now() const override { return now_; }
  void Advance(absl::Duration duration) { now_ += duration; }

 private:
  absl::Time now_ = absl::UnixEpoch();
};

}  // namespace kvd::scheduler::testing
