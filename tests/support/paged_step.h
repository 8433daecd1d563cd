// A random forward step over a paged KV pool for the attention tests: per sequence and kv head a
// cache length and a block table, the tables' blocks handed out in a shuffled order so that they
// jump around the pool, random pool entries, and the step's new queries, keys and values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace kvd::kernels {

// The attention heads of a model.
struct HeadShape {
  int32_t heads, kv_heads, head_dim;
};

// "heads x kv_heads x head_dim", for test names.
std::string HeadShapeName(const HeadShape& shape);

// The per-entry scores a sequence asks for: from its new row first_row on, folded by reduce.
struct ScoreSpec {
  int32_t first_row;
  ScoreReduce reduce;
};

// One sequence of a step: its new rows, the cache size from which the test's cached_length
// derives its kv heads' lengths, and the scores it asks for, if any.
struct SequenceSpec {
  int32_t rows;
  int32_t cache_size;
  std::optional<ScoreSpec> scores;
};

// What MakePagedStep draws.
struct PagedStep {
  // cached[s][h]: the entries kv head h of sequence s holds before the step.
  std::vector<std::vector<int32_t>> cached;
  // tables[s][h]: the blocks of kv head h of sequence s, room for its cached entries and new rows.
  std::vector<std::vector<std::vector<int32_t>>> tables;
  int32_t blocks = 0;
  int32_t total_rows = 0;
  // The pool's entries, blocks * block_size of them (keys and values head_dim floats each).
  std::vector<float> keys, values, votes;
  // The step's new rows: q of heads * head_dim floats, k and v of kv_heads * head_dim.
  std::vector<float> q, k, v;
};

// A step in which each sequence of `specs` appends its new rows and its kv head h holds
// cached_length(spec, h) entries, drawn from `random`.
PagedStep MakePagedStep(const HeadShape& shape, int32_t block_size,
                        std::span<const SequenceSpec> specs,
                        const std::function<int32_t(const SequenceSpec&, int32_t)>& cached_length,
                        std::mt19937& random);

}  // namespace kvd::kernels
