// What the CPU backend's projections cost, kernel by kernel: every matmul variant this CPU runs
// (and OpenBLAS for f32) on every weight type (the quantized ones when the input features are
// whole blocks), at several row counts, over weights far larger than the caches, against the
// machine's read bandwidth measured in the same run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/memory_bandwidth.h"
#include "kernels/dtype.h"

namespace kvd::bench {

struct MatmulBenchOptions {
  int64_t out_features = 8192;  // Llama 3.2 1B's gate and up projections
  int64_t in_features = 2048;
  std::vector<int64_t> rows = {1, 4, 16, 128};
  int32_t threads = 0;       // 0: every core
  int64_t weight_mib = 512;  // per type: copies of the matrix, read in turn, and the buffer the
                             // read bandwidth is measured on
  int32_t repeats = 5;       // timed passes over every copy; the median is kept
  std::optional<kernels::DType> dtype;  // the one weight type measured; none: every type
};

struct MatmulBenchRow {
  std::string variant;
  std::string dtype;
  int64_t rows = 0;
  double ms = 0.0;                    // one product (median)
  double gflops = 0.0;                // 2 · rows · in · out per product
  double weight_gb_per_second = 0.0;  // weight bytes read per product ÷ time
  double bandwidth_share = 0.0;       // of the measured read bandwidth
};

struct MatmulBenchResult {
  ReadBandwidth read;  // a STREAM-like read of `weight_bytes` on every thread
  std::string features;
  std::vector<MatmulBenchRow> rows;
};

[[nodiscard]] absl::StatusOr<MatmulBenchResult> MeasureMatmul(const MatmulBenchOptions& options);

// Prints the result as a markdown table under a line saying what was measured.
void PrintMatmulTable(const MatmulBenchOptions& options, const MatmulBenchResult& result);

}  // namespace kvd::bench
