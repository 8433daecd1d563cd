#include "bench/op_times.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace kvd::bench {
namespace {

// The per-op times of one batch's decode steps in `mode`, and its step time.
absl::StatusOr<double> DecodeWithTiming(engine::Model& model, OpTimingBackend& timing,
                                        ThroughputOptions options, int32_t batch_size,
                                        OpTimingBackend::Mode mode) {
  options.batch_sizes = {batch_size};
  options.decode_phase = [&timing, mode](bool decoding) {
    if (decoding) timing.Reset();
    timing.set_mode(decoding ? mode : OpTimingBackend::Mode::kOff);
  };
  auto results = MeasureThroughput(model, options);
  if (!results.ok()) return results.status();
  return results->front().decode_step_ms;
}

}  // namespace

absl::StatusOr<std::vector<OpTimesResult>> MeasureOpTimes(engine::Model& model,
                                                          OpTimingBackend& timing,
                                                          const ThroughputOptions& options) {
  if (&model.backend() != &timing) {
    return absl::InvalidArgumentError("the model must be loaded on the op-timing backend");
  }
  if (options.decode_tokens <= 0) {
    return absl::InvalidArgumentError("op times need at least one decode step");
  }
  const double steps = options.decode_tokens;
  std::vector<OpTimesResult> results;
  for (int32_t batch_size : options.batch_sizes) {
    OpTimesResult result;
    result.batch_size = batch_size;
    auto untimed =
        DecodeWithTiming(model, timing, options, batch_size, OpTimingBackend::Mode::kOff);
    if (!untimed.ok()) return untimed.status();
    result.step_ms = *untimed;

    std::map<std::string_view, OpTimeRow> rows;
    if (auto host = DecodeWithTiming(model, timing, options, batch_size,
                                     OpTimingBackend::Mode::kHost);
        !host.ok()) {
      return host.status();
    }
    for (const auto& [op, time] : timing.times()) {
      OpTimeRow& row = rows[op];
      row.op = std::string(op);
      row.calls_per_step = time.calls / steps;
      row.host_us_per_step = 1e6 * time.seconds / steps;
      result.host_ms += 1e3 * time.seconds / steps;
    }
    auto synchronized = DecodeWithTiming(model, timing, options, batch_size,
                                         OpTimingBackend::Mode::kSynchronized);
    if (!synchronized.ok()) return synchronized.status();
    result.synchronized_step_ms = *synchronized;
    for (const auto& [op, time] : timing.times()) {
      OpTimeRow& row = rows[op];
      row.op = std::string(op);
      row.calls_per_step = time.calls / steps;
      row.synchronized_us_per_step = 1e6 * time.seconds / steps;
    }
    for (auto& [op, row] : rows) result.ops.push_back(std::move(row));
    std::sort(result.ops.begin(), result.ops.end(), [](const OpTimeRow& a, const OpTimeRow& b) {
      return a.synchronized_us_per_step > b.synchronized_us_per_step;
    });
    results.push_back(std::move(result));
  }
  return results;
}

void PrintOpTimes(const std::vector<OpTimesResult>& results) {
  for (const OpTimesResult& result : results) {
    std::printf(
        "\nbatch %d: a decode step %.3f ms as it runs, of which the host's calls %.3f ms; %.3f "
        "ms with every op synchronised\n\n",
        result.batch_size, result.step_ms, result.host_ms, result.synchronized_step_ms);
    std::printf(
        "| op | calls/step | host us/step | synchronised us/step | of the synchronised step "
        "|\n|---|---:|---:|---:|---:|\n");
    for (const OpTimeRow& row : result.ops) {
      std::printf("| %s | %.1f | %.1f | %.1f | %.1f%% |\n", row.op.c_str(), row.calls_per_step,
                  row.host_us_per_step, row.synchronized_us_per_step,
                  100.0 * row.synchronized_us_per_step / (1e3 * result.synchronized_step_ms));
    }
  }
  std::fflush(stdout);
}

}  // namespace kvd::bench
