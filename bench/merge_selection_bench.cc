#include "bench/merge_selection_bench.h"

#include <chrono>
#include <cstdio>
#include <random>

#include "bench/statistics.h"
#include "cache_store/keepkv/merge_pairs.h"

namespace kvd::bench {
namespace {

template <typename Select>
double MedianMs(int32_t repeats, Select select) {
  std::vector<double> ms;
  for (int32_t r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    select();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  return Median(ms);
}

}  // namespace

std::vector<MergeSelectionBenchRow> MeasureMergeSelection(
    const MergeSelectionBenchOptions& options) {
  std::mt19937 random(static_cast<uint32_t>(options.seed));
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> uniform;
  std::vector<MergeSelectionBenchRow> rows;
  for (int32_t n : options.entries) {
    const size_t floats = static_cast<size_t>(n) * options.head_dim;
    std::vector<float> keys(floats), values(floats), scores(n);
    for (float& x : keys) x = normal(random);
    for (float& x : values) x = normal(random);
    for (float& x : scores) x = uniform(random);
    const std::vector<uint8_t> mergeable(n, 1);
    MergeSelectionBenchRow row;
    row.entries = n;
    row.selected = n - static_cast<int32_t>(options.budget * n);
    // Random keys are far from one another: no cosine threshold, so that every selected entry
    // searches every partner, as the merges of a real prompt do.
    row.lowest_scored_ms = MedianMs(options.repeats, [&] {
      cache_store::SelectLowestScoredMerges(keys, values, options.head_dim, mergeable, scores,
                                            row.selected, -1.0f, -1.0f);
    });
    row.similar_pairs_ms = MedianMs(options.repeats, [&] {
      cache_store::SelectMergePairs(keys, options.head_dim, mergeable, scores,
                                    {.max_pairs = row.selected / 2, .min_cosine = -1.0f});
    });
    rows.push_back(row);
  }
  return rows;
}

void PrintMergeSelectionTable(const MergeSelectionBenchOptions& options,
                              const std::vector<MergeSelectionBenchRow>& rows) {
  std::printf(
      "KeepKV merge selection for one (layer, kv head), head_dim %d, budget %.0f%%, random keys, "
      "median of %d\n\n| entries | selected | lowest-scored ms | x 128 heads ms | similar-pairs "
      "pass ms |\n|---:|---:|---:|---:|---:|\n",
      options.head_dim, 100.0 * options.budget, options.repeats);
  for (const MergeSelectionBenchRow& row : rows) {
    std::printf("| %d | %d | %.2f | %.0f | %.2f |\n", row.entries, row.selected,
                row.lowest_scored_ms, 128.0 * row.lowest_scored_ms, row.similar_pairs_ms);
  }
}

}  // namespace kvd::bench
