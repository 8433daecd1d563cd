// The machine's memory read bandwidth, measured as STREAM's read kernels do: summing a buffer far
// larger than the caches on every thread; the roofline decode figures are a share of.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace kvd::bench {

struct ReadBandwidth {
  double gb_per_second = 0.0;
  // The share of the buffer the kernel gave transparent huge pages, where it reports it: a read
  // in small pages also pays for address translation, and so may a decode whose weights are.
  std::optional<double> huge_page_share;
};

// GB/s (10⁹ bytes) of reading `bytes` on `threads` threads (0: every core): the best of five
// passes, as STREAM reports, since other load on a shared machine only ever slows a pass. The
// buffer is the backend's kind of memory (kernels/cpu/host_memory.h), where the weights are.
[[nodiscard]] absl::StatusOr<ReadBandwidth> MeasureReadBandwidth(int64_t bytes, int32_t threads);

// "N% in huge pages" of `share`, or "huge pages not reported".
std::string HugePageNote(std::optional<double> share);
// This process's resident anonymous memory (after a model is loaded: its weights, the KV pool)
// and the share of it in huge pages, as a line to print.
std::string ResidentMemoryNote();

}  // namespace kvd::bench
