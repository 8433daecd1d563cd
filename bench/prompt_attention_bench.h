// What a prompt's attention costs on the CPU, kernel by kernel: one call of every vector rows
// kernel this CPU runs (attention_rows.h) over a chunk of a prompt's rows at one kv head, after
// contexts of several lengths, over f32 and bf16 keys and values, on one thread, the kernels' calls
// interleaved in every repeat; in GFLOP/s of the logits' and the value sums' multiply-adds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kvd::bench {

struct PromptAttentionBenchOptions {
  std::vector<int32_t> entries = {1024, 4096, 16384};  // entries the chunk's first row sees
  std::vector<int32_t> rows = {8, 16};                 // rows of a chunk
  int32_t group = 4;  // query heads of a kv head (Llama 3.2 1B's 32 / 8)
  int32_t head_dim = 64;
  int32_t repeats = 9;  // timed rounds of every kernel; the median is kept
  uint64_t seed = 1;
};

struct PromptAttentionBenchRow {
  std::string kernel;
  std::string kv_dtype;
  int32_t entries = 0;
  int32_t rows = 0;
  double ms = 0.0;      // one call (median)
  double gflops = 0.0;  // 2 · 2 · queries · entries seen · head_dim ÷ time
};

[[nodiscard]] absl::StatusOr<std::vector<PromptAttentionBenchRow>> MeasurePromptAttention(
    const PromptAttentionBenchOptions& options);

// Prints the rows as a markdown table under a line saying what was measured.
void PrintPromptAttentionTable(const PromptAttentionBenchOptions& options,
                               const std::vector<PromptAttentionBenchRow>& rows);

}  // namespace kvd::bench
