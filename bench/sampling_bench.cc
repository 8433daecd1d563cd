#include "bench/sampling_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <random>
#include <utility>

#include "engine/sampling.h"

namespace kvd::bench {
namespace {

using Clock = std::chrono::steady_clock;

double MillisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct Mode {
  std::string name;
  engine::SamplingParams params;
};

}  // namespace

absl::StatusOr<std::vector<SamplingBenchRow>> MeasureSampling(kernels::Backend& backend,
                                                              const SamplingBenchOptions& options) {
  if (options.vocab_size < 1 || options.steps < 1) {
    return absl::InvalidArgumentError("sampling bench: vocabulary and steps must be positive");
  }
  const std::vector<Mode> modes = {
      {"greedy", {.temperature = 0.0f}},
      {"temperature 1, top_p 0.9", {.temperature = 1.0f, .top_p = 0.9f}},
      {"temperature 1", {.temperature = 1.0f}}};
  const int32_t top_k = std::min(kernels::kMaxTopLogits, options.vocab_size);
  std::mt19937 random(static_cast<uint32_t>(options.seed));
  std::vector<float> zipf(options.vocab_size);
  for (int32_t rank = 0; rank < options.vocab_size; ++rank) {
    zipf[rank] = -options.zipf_exponent * std::log(static_cast<float>(rank + 1));
  }
  std::vector<SamplingBenchRow> rows;
  for (const int32_t batch : options.batch_sizes) {
    const size_t count = static_cast<size_t>(batch) * options.vocab_size;
    auto buffer = backend.Allocate(count * sizeof(float));
    if (!buffer.ok()) return buffer.status();
    const kernels::Tensor logits{(*buffer)->data(), kernels::DType::kF32, batch,
                                 options.vocab_size};
    std::vector<float> host(count);
    for (int32_t b = 0; b < batch; ++b) {
      const auto row = host.begin() + static_cast<ptrdiff_t>(b) * options.vocab_size;
      std::copy(zipf.begin(), zipf.end(), row);
      std::shuffle(row, row + options.vocab_size, random);
    }
    backend.CopyFromHost(host.data(), logits);

    for (const Mode& mode : modes) {
      SamplingBenchRow row{.mode = mode.name, .batch_size = batch};
      std::vector<engine::Sampler> whole, top;
      for (int32_t b = 0; b < batch; ++b) {
        whole.emplace_back(mode.params, options.seed + b);
        top.emplace_back(mode.params, options.seed + b);
      }
      const std::vector<int32_t> context = {1};
      std::vector<float> values;
      auto start = Clock::now();
      for (int32_t step = 0; step < options.steps; ++step) {
        values.resize(count);
        backend.CopyToHost(logits, values.data());
        for (int32_t b = 0; b < batch; ++b) {
          whole[b].Sample({values.data() + static_cast<size_t>(b) * options.vocab_size,
                           static_cast<size_t>(options.vocab_size)},
                          context, 0);
        }
      }
      row.whole_ms = MillisecondsSince(start) / options.steps;

      const float inverse_temperature =
          mode.params.temperature > 0.0f ? 1.0f / mode.params.temperature : 1.0f;
      const std::vector<float> inverse_temperatures(batch, inverse_temperature);
      std::vector<float> top_values(static_cast<size_t>(batch) * top_k);
      std::vector<int32_t> top_ids(top_values.size());
      std::vector<float> normalizers(2 * static_cast<size_t>(batch));
      std::vector<float> whole_row(options.vocab_size);
      int64_t whole_rows = 0;
      start = Clock::now();
      for (int32_t step = 0; step < options.steps; ++step) {
        backend.TopLogits(logits, top_k, inverse_temperatures, top_values.data(), top_ids.data(),
                          normalizers.data());
        for (int32_t b = 0; b < batch; ++b) {
          const size_t offset = static_cast<size_t>(b) * top_k;
          const engine::TopLogits row_top{{top_values.data() + offset, static_cast<size_t>(top_k)},
                                          {top_ids.data() + offset, static_cast<size_t>(top_k)},
                                          normalizers[2 * static_cast<size_t>(b)],
                                          normalizers[2 * static_cast<size_t>(b) + 1],
                                          options.vocab_size};
          if (top[b].SampleFromTop(row_top)) continue;
          ++whole_rows;
          backend.CopyToHost(logits.Rows(b, 1), whole_row.data());
          top[b].Sample(whole_row, context, 0);
        }
      }
      row.top_ms = MillisecondsSince(start) / options.steps;
      row.whole_row_share = static_cast<double>(whole_rows) / (int64_t{batch} * options.steps);
      if (absl::Status status = backend.TakeError(); !status.ok()) return status;
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

void PrintSamplingTable(const SamplingBenchOptions& options,
                        const std::vector<SamplingBenchRow>& rows) {
  std::printf(
      "logits to tokens: Zipf-shaped logits (exponent %.2f) over %d tokens, whole rows to the "
      "host against the top %d logits, %d steps\n\n",
      options.zipf_exponent, options.vocab_size,
      std::min(kernels::kMaxTopLogits, options.vocab_size), options.steps);
  std::printf(
      "| draw | batch | whole rows ms/step | top logits ms/step | whole / top | rows read whole "
      "|\n|---|---:|---:|---:|---:|---:|\n");
  for (const auto& row : rows) {
    std::printf("| %s | %d | %.3f | %.3f | %.1f | %.1f%% |\n", row.mode.c_str(), row.batch_size,
                row.whole_ms, row.top_ms, row.top_ms > 0.0 ? row.whole_ms / row.top_ms : 0.0,
                100.0 * row.whole_row_share);
  }
}

}  // namespace kvd::bench
