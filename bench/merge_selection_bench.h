// What choosing KeepKV's merges costs on the host for one (layer, kv head): the lowest-scored
// selection with each entry's most similar partner, and the similar-pairs selection, on random
// keys and values, at several entry counts; a prompt's compaction runs one per head.
#pragma once

#include <cstdint>
#include <vector>

namespace kvd::bench {

struct MergeSelectionBenchOptions {
  std::vector<int32_t> entries = {512, 1024, 2048, 4096};
  int32_t head_dim = 64;
  double budget = 0.1;  // the fraction of entries kept: the rest are selected
  int32_t repeats = 5;  // the median is kept
  uint64_t seed = 1;
};

struct MergeSelectionBenchRow {
  int32_t entries = 0;
  int32_t selected = 0;         // entries the lowest-scored selection folds or evicts
  double lowest_scored_ms = 0;  // SelectLowestScoredMerges, median
  double similar_pairs_ms = 0;  // one SelectMergePairs pass for as many pairs, median
};

[[nodiscard]] std::vector<MergeSelectionBenchRow> MeasureMergeSelection(
    const MergeSelectionBenchOptions& options);

void PrintMergeSelectionTable(const MergeSelectionBenchOptions& options,
                              const std::vector<MergeSelectionBenchRow>& rows);

}  // namespace kvd::bench
