#include "bench/matmul_bench.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <thread>

#include "base/check.h"
#include "bench/memory_bandwidth.h"
#include "bench/statistics.h"
#include "bench/stopwatch.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/host_memory.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/thread_pool.h"

namespace kvd::bench {
namespace {

using kernels::DType;
using kernels::cpu::MatmulArgs;
using kernels::cpu::MatmulVariant;
using kernels::cpu::ThreadPool;
// `count` random [out, in] matrices in `dtype`, one after the other.
// In the memory the CPU backend keeps weights in (kernels/cpu/host_memory.h).
absl::StatusOr<std::unique_ptr<kernels::DeviceBuffer>> RandomWeights(DType dtype, int64_t count,
                                                                     int64_t out, int64_t in,
                                                                     std::mt19937& random,
                                                                     ThreadPool& pool) {
  std::normal_distribution<float> normal(0.0f, 0.02f);
  const size_t row_bytes = kernels::RowBytes(dtype, in);
  auto bytes = kernels::cpu::AllocateResident(static_cast<size_t>(count * out) * row_bytes, pool);
  if (!bytes.ok()) return bytes.status();
  std::vector<float> row(static_cast<size_t>(in));
  for (int64_t r = 0; r < count * out; ++r) {
    for (float& v : row) v = normal(random);
    auto* dst = static_cast<uint8_t*>((*bytes)->data()) + r * row_bytes;
    if (kernels::IsQuantized(dtype)) {
      KVD_CHECK(kernels::cpu::QuantizeRow(dtype, row.data(), in, dst));  // finite by construction
    } else if (dtype == DType::kF32) {
      std::memcpy(dst, row.data(), row_bytes);
    } else {
      for (int64_t i = 0; i < in; ++i) {
        const uint16_t bits =
            dtype == DType::kBF16 ? kernels::FloatToBF16(row[i]) : kernels::FloatToF16(row[i]);
        std::memcpy(dst + 2 * i, &bits, 2);
      }
    }
  }
  return bytes;
}

}  // namespace

absl::StatusOr<MatmulBenchResult> MeasureMatmul(const MatmulBenchOptions& options) {
  if (options.out_features <= 0 || options.in_features <= 0 || options.rows.empty() ||
      options.repeats <= 0 || options.weight_mib <= 0 ||
      std::any_of(options.rows.begin(), options.rows.end(), [](int64_t r) { return r <= 0; })) {
    return absl::InvalidArgumentError(
        "matmul bench: shapes, rows, repeats and MiB must be positive");
  }
  ThreadPool pool(options.threads > 0
                      ? options.threads
                      : std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
  MatmulBenchResult result;
  result.features = kernels::cpu::HostCpuFeatures().ToString();
  std::mt19937 random(1);
  const int64_t matrix = options.out_features * options.in_features;
  auto bandwidth = MeasureReadBandwidth(options.weight_mib << 20, pool.num_threads());
  if (!bandwidth.ok()) return bandwidth.status();
  result.read = *bandwidth;
  const int64_t max_rows = *std::max_element(options.rows.begin(), options.rows.end());
  // In the memory the CPU backend keeps activations in, aligned as there.
  const int64_t x_count = max_rows * options.in_features;
  auto x_buffer =
      kernels::cpu::AllocateResident(static_cast<size_t>(x_count) * sizeof(float), pool);
  if (!x_buffer.ok()) return x_buffer.status();
  const std::span<float> x(static_cast<float*>((*x_buffer)->data()), static_cast<size_t>(x_count));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : x) v = normal(random);
  std::vector<float> out(static_cast<size_t>(max_rows * options.out_features));
  std::vector<MatmulVariant> variants = {kernels::cpu::OpenBlasMatmul()};
  for (const auto& v : kernels::cpu::AllKernels().matmul.RunnableHere()) {
    variants.push_back(v.kernel);
  }
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16, DType::kInt8, DType::kInt4}) {
    if (options.dtype && dtype != *options.dtype) continue;
    if (kernels::IsQuantized(dtype) && options.in_features % kernels::kQuantBlock != 0) continue;
    const int64_t matrix_bytes =
        options.out_features * static_cast<int64_t>(kernels::RowBytes(dtype, options.in_features));
    const int64_t copies = std::max<int64_t>(1, (options.weight_mib << 20) / matrix_bytes);
    auto weights =
        RandomWeights(dtype, copies, options.out_features, options.in_features, random, pool);
    if (!weights.ok()) return weights.status();
    const auto* weight_bytes = static_cast<const uint8_t*>((*weights)->data());
    for (const MatmulVariant& variant : variants) {
      if (variant.name == "openblas" && dtype != DType::kF32) continue;
      for (int64_t rows : options.rows) {
        // The scalar reference on many rows would take minutes: one copy, one pass.
        const bool slow = variant.name == "scalar";
        if (slow && rows > 4) continue;
        std::vector<double> seconds;
        for (int repeat = 0; repeat < (slow ? 1 : options.repeats); ++repeat) {
          const Clock::time_point start = Clock::now();
          const int64_t passes = slow ? 1 : copies;
          for (int64_t copy = 0; copy < passes; ++copy) {
            kernels::cpu::ParallelMatmul(variant,
                                         MatmulArgs{.x = x.data(),
                                                    .rows = rows,
                                                    .in = options.in_features,
                                                    .weight = weight_bytes + copy * matrix_bytes,
                                                    .dtype = dtype,
                                                    .first = 0,
                                                    .count = options.out_features,
                                                    .out = out.data(),
                                                    .out_stride = options.out_features},
                                         pool);
          }
          seconds.push_back(SecondsSince(start) / static_cast<double>(passes));
        }
        MatmulBenchRow row{.variant = std::string(variant.name),
                           .dtype = std::string(kernels::DTypeName(dtype)),
                           .rows = rows,
                           .ms = Median(seconds) * 1e3};
        const double s = row.ms / 1e3;
        row.gflops = 2.0 * static_cast<double>(rows * matrix) / s / 1e9;
        row.weight_gb_per_second = static_cast<double>(matrix_bytes) / s / 1e9;
        row.bandwidth_share = row.weight_gb_per_second / result.read.gb_per_second;
        result.rows.push_back(row);
      }
    }
  }
  return result;
}

void PrintMatmulTable(const MatmulBenchOptions& options, const MatmulBenchResult& result) {
  std::printf(
      "matmul [%lld x %lld] weights, %lld MiB per type; CPU features %s; read bandwidth "
      "%.1f GB/s (%s)\n",
      static_cast<long long>(options.out_features), static_cast<long long>(options.in_features),
      static_cast<long long>(options.weight_mib), result.features.c_str(),
      result.read.gb_per_second, HugePageNote(result.read.huge_page_share).c_str());
  std::printf("| variant | weights | rows | ms | GFLOP/s | weight GB/s | of bandwidth |\n");
  std::printf("|---|---|---:|---:|---:|---:|---:|\n");
  for (const MatmulBenchRow& row : result.rows) {
    std::printf("| %s | %s | %lld | %.3f | %.1f | %.1f | %.0f%% |\n", row.variant.c_str(),
                row.dtype.c_str(), static_cast<long long>(row.rows), row.ms, row.gflops,
                row.weight_gb_per_second, 100.0 * row.bandwidth_share);
  }
}

}  // namespace kvd::bench
