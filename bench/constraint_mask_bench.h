// What constrained decoding costs on the host, over a real tokenizer's vocabulary: compiling a
// constraint, and the token mask of each step along random walks through it (a walk picks any
// allowed token), split into masks walked out of the vocabulary and masks found remembered.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kvd::bench {

struct ConstraintMaskBenchOptions {
  std::string tokenizer_path;  // a tokenizer.json
  int32_t walks = 32;          // sequences per constraint, one after another
  int32_t max_tokens = 256;    // tokens per walk at most
  int32_t compile_repeats = 5;
  uint64_t seed = 1;
};

struct ConstraintMaskBenchRow {
  std::string constraint;
  double compile_ms = 0;       // grammar compile, median
  int64_t steps = 0;           // masks asked for over all walks
  int64_t walked = 0;          // of them, walked out of the vocabulary
  double walk_ms_median = 0;   // one vocabulary walk
  double walk_ms_max = 0;
  double step_us_mean = 0;     // mask + accept per step, all steps
  double warm_step_us_mean = 0;  // the same over the last walk, every mask already remembered
};

struct ConstraintMaskBenchResult {
  int32_t vocab_size = 0;
  size_t trie_nodes = 0;
  double trie_ms = 0;
  std::vector<ConstraintMaskBenchRow> rows;
};

[[nodiscard]] absl::StatusOr<ConstraintMaskBenchResult> MeasureConstraintMasks(
    const ConstraintMaskBenchOptions& options);

void PrintConstraintMaskTable(const ConstraintMaskBenchOptions& options,
                              const ConstraintMaskBenchResult& result);

}  // namespace kvd::bench
