#include "bench/prompt_attention_bench.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>

#include "bench/statistics.h"
#include "bench/stopwatch.h"
#include "kernels/cpu/attention_rows.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/dtype.h"

namespace kvd::bench {
namespace {

using kernels::DType;

// Calls a timing repeats, so that one timing takes about this many multiply-adds (tens of ms).
constexpr double kMultiplyAddsPerTiming = 2e9;

}  // namespace

absl::StatusOr<std::vector<PromptAttentionBenchRow>> MeasurePromptAttention(
    const PromptAttentionBenchOptions& options) {
  const auto positive = [](int32_t v) { return v > 0; };
  if (options.entries.empty() || options.rows.empty() || options.group <= 0 ||
      options.head_dim <= 0 || options.repeats <= 0 ||
      !std::all_of(options.entries.begin(), options.entries.end(), positive) ||
      !std::all_of(options.rows.begin(), options.rows.end(), positive)) {
    return absl::InvalidArgumentError(
        "prompt attention bench: lengths, rows, group, head size and repeats must be positive");
  }
  // The vector kernels this CPU runs (the scalar reference, a hundred times slower, left out).
  auto variants = kernels::cpu::AllKernels().attention_rows.RunnableHere();
  variants.pop_back();
  std::mt19937 random(static_cast<uint32_t>(options.seed));
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<PromptAttentionBenchRow> result;
  for (const DType dtype : {DType::kF32, DType::kBF16}) {
    for (const int32_t first_entries : options.entries) {
      for (const int32_t rows : options.rows) {
        const int32_t entries = first_entries + rows - 1;
        const int64_t elements = int64_t{entries} * options.head_dim;
        std::vector<float> keys(static_cast<size_t>(elements)), values(keys.size());
        std::vector<uint16_t> keys_bf16(keys.size()), values_bf16(keys.size());
        for (int64_t i = 0; i < elements; ++i) {
          keys[i] = uniform(random);
          values[i] = uniform(random);
          keys_bf16[i] = kernels::FloatToBF16(keys[i]);
          values_bf16[i] = kernels::FloatToBF16(values[i]);
        }
        std::vector<float> log_votes(static_cast<size_t>(entries), 0.0f);
        const bool bf16 = dtype == DType::kBF16;
        const kernels::KvPool pool{
            .keys = bf16 ? static_cast<void*>(keys_bf16.data()) : keys.data(),
            .values = bf16 ? static_cast<void*>(values_bf16.data()) : values.data(),
            .log_votes = log_votes.data(),
            .num_blocks = entries,
            .block_size = 1,
            .head_dim = options.head_dim,
            .dtype = dtype};
        std::vector<int64_t> slots(static_cast<size_t>(entries));
        std::iota(slots.begin(), slots.end(), 0);
        const int64_t row_stride = int64_t{options.group} * options.head_dim;
        std::vector<float> queries(static_cast<size_t>(rows * row_stride)), out(queries.size());
        for (float& q : queries) q = uniform(random);
        const int64_t weight_stride = kernels::cpu::RowsWeightStride(entries);
        std::vector<float> weights(static_cast<size_t>(rows * options.group * weight_stride));
        std::vector<double> totals(static_cast<size_t>(rows) * options.group);
        const kernels::cpu::AttentionRows args{.pool = &pool,
                                               .slots = slots.data(),
                                               .first_entries = first_entries,
                                               .rows = rows,
                                               .group = options.group,
                                               .head_dim = options.head_dim,
                                               .scale = 0.125f,
                                               .queries = queries.data(),
                                               .out = out.data(),
                                               .row_stride = row_stride,
                                               .weights = weights.data(),
                                               .weight_stride = weight_stride,
                                               .totals = totals.data()};
        // Every query's entries, each a logit and a weighted value of head_dim multiply-adds.
        double multiply_adds = 0.0;
        for (int32_t r = 0; r < rows; ++r) {
          multiply_adds += 2.0 * options.group * (first_entries + r) * options.head_dim;
        }
        const int calls = std::max(1, static_cast<int>(kMultiplyAddsPerTiming / multiply_adds));
        std::vector<std::vector<double>> seconds(variants.size());
        for (int repeat = 0; repeat < options.repeats; ++repeat) {
          for (size_t v = 0; v < variants.size(); ++v) {
            const Clock::time_point start = Clock::now();
            for (int c = 0; c < calls; ++c) variants[v].kernel(args);
            seconds[v].push_back(SecondsSince(start) / calls);
          }
        }
        for (size_t v = 0; v < variants.size(); ++v) {
          const double median = Median(seconds[v]);
          result.push_back({.kernel = std::string(variants[v].name),
                            .kv_dtype = std::string(kernels::DTypeName(dtype)),
                            .entries = first_entries,
                            .rows = rows,
                            .ms = median * 1e3,
                            .gflops = 2.0 * multiply_adds / median / 1e9});
        }
      }
    }
  }
  return result;
}

void PrintPromptAttentionTable(const PromptAttentionBenchOptions& options,
                               const std::vector<PromptAttentionBenchRow>& rows) {
  std::printf(
      "attention of a chunk of prompt rows at one kv head, %d query heads of %d, one thread, "
      "medians of %d interleaved rounds\n",
      options.group, options.head_dim, options.repeats);
  std::printf(
      "| kernel | kv cache | entries | rows | ms | GFLOP/s |\n|---|---|---:|---:|---:|---:|\n");
  for (const PromptAttentionBenchRow& row : rows) {
    std::printf("| %s | %s | %d | %d | %.3f | %.1f |\n", row.kernel.c_str(), row.kv_dtype.c_str(),
                row.entries, row.rows, row.ms, row.gflops);
  }
}

}  // namespace kvd::bench
