// The machine's memory bandwidth, the roofline decode figures are a share of: read as STREAM's
// read kernels do (summing a buffer far larger than the caches on every thread), and STREAM's
// triad, the figure peers quote.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace kvd::bench {

struct ReadBandwidth {
  double gb_per_second = 0.0;
  // STREAM's triad a[i] = b[i] + s * c[i] over three buffers of a third of the bytes each,
  // counting the 12 bytes of an element that STREAM counts (two read, one written).
  double triad_gb_per_second = 0.0;
  // The share of the buffer the kernel gave transparent huge pages, where it reports it: a read
  // in small pages also pays for address translation, and so may a decode whose weights are.
  std::optional<double> huge_page_share;
};

// GB/s (10⁹ bytes) of reading `bytes`, and of the triad over as many bytes, on `threads` threads
// (0: every core): the best of five passes each, as STREAM reports, since other load on a shared
// machine only ever slows a pass. The buffer is the backend's kind of memory
// (kernels/cpu/host_memory.h), where the weights are.
[[nodiscard]] absl::StatusOr<ReadBandwidth> MeasureReadBandwidth(int64_t bytes, int32_t threads);

// "N% in huge pages" of `share`, or "huge pages not reported".
std::string HugePageNote(std::optional<double> share);
// This process's resident anonymous memory (after a model is loaded: its weights, the KV pool)
// and the share of it in huge pages, as a line to print.
std::string ResidentMemoryNote();

}  // namespace kvd::bench
