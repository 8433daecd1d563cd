// The clock the benchmarks time with, and seconds since a point of it.
#pragma once

#include <chrono>

namespace kvd::bench {

using Clock = std::chrono::steady_clock;

inline double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace kvd::bench
