// Where the scheduler reads the time: the system clock in production, a fake one in tests.
#pragma once

#include "absl/time/time.h"

namespace kvd::scheduler {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;

  // The system clock; lives for the whole program.
  static const Clock& System();
};

}  // namespace kvd::scheduler
