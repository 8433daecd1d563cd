#include "scheduler/clock.h"

#include "absl/time/clock.h"

namespace kvd::scheduler {
namespace {

class SystemClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
};

}  // namespace

const Clock& Clock::System() {
  static const SystemClock clock;
  return clock;
}

}  // namespace kvd::scheduler
