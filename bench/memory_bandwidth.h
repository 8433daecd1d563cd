// The machine's memory read bandwidth, measured as STREAM's read kernels do: summing a buffer far
// larger than the caches on every thread; the roofline decode figures are a share of.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"

namespace kvd::bench {

// GB/s (10⁹ bytes) of reading `bytes` on `threads` threads (0: every core): the best of five
// passes, as STREAM reports, since other load on a shared machine only ever slows a pass. The
// buffer is the backend's kind of memory (kernels/cpu/host_memory.h), where the weights are.
[[nodiscard]] absl::StatusOr<double> MeasureReadBandwidth(int64_t bytes, int32_t threads);

}  // namespace kvd::bench
