// What turning a step's logits into tokens costs per step: copying the whole rows to the host
// and sampling them, against asking the backend for each row's top logits and sampling from
// those (reading a row whole only when they leave the draw open), at several batch sizes, for
// greedy and sampled draws, on any backend.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/backend.h"

namespace kvd::bench {

struct SamplingBenchOptions {
  std::vector<int32_t> batch_sizes = {1, 16, 64};
  int32_t vocab_size = 128256;  // Llama 3's
  int32_t steps = 20;           // timed steps per batch size and mode
  // Each row's logits: -zipf_exponent * ln(rank) for ranks 1 .. vocab over shuffled token ids,
  // so probabilities fall as rank^-exponent, like a language model's next-token distribution
  // (larger is more peaked).
  float zipf_exponent = 1.2f;
  uint64_t seed = 1;
};

struct SamplingBenchRow {
  std::string mode;  // the draw: greedy, or the sampling parameters
  int32_t batch_size = 0;
  double whole_ms = 0.0;         // per step: whole rows to the host, then Sampler::Sample
  double top_ms = 0.0;           // per step: TopLogits, then Sampler::SampleFromTop
  double whole_row_share = 0.0;  // of the rows, those the top logits left to the whole row
};

[[nodiscard]] absl::StatusOr<std::vector<SamplingBenchRow>> MeasureSampling(
    kernels::Backend& backend, const SamplingBenchOptions& options);

// Prints the rows as a markdown table under a line saying what was measured.
void PrintSamplingTable(const SamplingBenchOptions& options,
                        const std::vector<SamplingBenchRow>& rows);

}  // namespace kvd::bench
