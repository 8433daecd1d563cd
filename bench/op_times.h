// Where a decode step's time goes, op by op: the host's time in each backend call as the step
// runs, and each op's whole time with the backend's queue drained around it. On the CPU the
// two agree; on a device their difference shows whether a step waits for the host.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/op_timing_backend.h"
#include "bench/throughput.h"
#include "engine/model.h"

namespace kvd::bench {

struct OpTimeRow {
  std::string op;
  double calls_per_step = 0.0;
  double host_us_per_step = 0.0;          // time in the calls, the step run as it is
  double synchronized_us_per_step = 0.0;  // each call's time until the queue drained
};

struct OpTimesResult {
  int32_t batch_size = 0;
  double step_ms = 0.0;               // a decode step as it runs, untimed ops
  double host_ms = 0.0;               // the host's time in the calls
  double synchronized_step_ms = 0.0;  // a step with every op synchronised
  std::vector<OpTimeRow> ops;         // the most synchronised time first
};

// Decode steps of `model`, which must run on `timing` (loaded with it), measured three times per
// batch size: untimed, each call timed, each call synchronised and timed.
[[nodiscard]] absl::StatusOr<std::vector<OpTimesResult>> MeasureOpTimes(
    engine::Model& model, OpTimingBackend& timing, const ThroughputOptions& options);

void PrintOpTimes(const std::vector<OpTimesResult>& results);

}  // namespace kvd::bench
