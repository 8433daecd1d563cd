// How one Attention call on the CUDA backend splits into launches, planned on the host: decode
// tasks (one new row: the kv group's query heads together, entries split into partitions),
// prefill tasks (tiles of query vectors over tiles of entries), and score tasks (probabilities
// folded per entry once the rows' log-sum-exps are known), with the block tables flattened.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/kv_layout.h"

namespace kvd::kernels::cuda {

// The new rows of one sequence at one kv head.
struct AttentionTask {
  int32_t q_first_row = 0;  // the sequence's first row in q and out
  int32_t num_rows = 0;     // row i sees cached_length + i + 1 entries
  int32_t kv_head = 0;
  int32_t cached_length = 0;  // entries before the new rows
  int64_t table_offset = 0;   // where the head's block table starts in the flat table array
  int64_t first_partial = 0;  // decode: where its partitions' partial results start
};

// A task whose rows from first_row on fold their probabilities into scores[j] (device memory,
// this kv head's part of the sequence's scores).
struct ScoreTask {
  AttentionTask rows;
  float* scores = nullptr;
  int32_t first_row = 0;
  int32_t reduce_max = 0;  // 1: ScoreReduce::kMax, 0: kSum
};

// The kernels take heads of a multiple of 4 dimensions (float4 loads) up to this many.
inline constexpr int32_t kMaxAttentionHeadDim = 256;

// Query vectors (row, query head of the group) per prefill tile, and entries per entry tile;
// the prefill and score kernels are written for these.
inline constexpr int32_t kQueryTileVectors = 32;
inline constexpr int32_t kEntryTile = 32;
// Query heads a decode thread block takes together: the group's size rounded up to a power of
// two, at most 8 (a larger group takes several blocks).
inline constexpr int32_t kMaxDecodeHeadsPerBlock = 8;
inline int32_t DecodeHeadsPerBlock(int32_t group) {
  int32_t heads = 1;
  while (heads < group && heads < kMaxDecodeHeadsPerBlock) heads *= 2;
  return heads;
}
// Rows of a score task one thread block folds.
inline constexpr int32_t kScoreRowsPerBlock = 64;
// Decode partitions hold between these many entries (powers of two).
inline constexpr int32_t kMinPartition = 64;
inline constexpr int32_t kMaxPartition = 4096;

struct AttentionPlan {
  std::vector<AttentionTask> decode;   // one row each
  std::vector<AttentionTask> prefill;  // the rest
  std::vector<ScoreTask> scores;
  std::vector<int32_t> tables;
  int32_t decode_partition = kMinPartition;  // entries per decode partition
  int32_t decode_partitions = 0;             // the most any decode task has
  int64_t decode_partial_partitions = 0;     // all decode tasks' partitions together
  int32_t prefill_tiles = 0;                 // the most query tiles any prefill task has
  int32_t score_entry_tiles = 0;             // the most entry tiles any score task has
  int32_t score_row_blocks = 0;              // the most row blocks any score task has
};

// Plans the launches of an Attention call; `multiprocessors` (the device's) sizes the decode
// partitions: the largest that still give every multiprocessor a few thread blocks.
[[nodiscard]] AttentionPlan PlanAttention(const KvPool& pool,
                                          std::span<const SequenceKvRef> sequences,
                                          const AttentionShape& shape, int32_t multiprocessors);

// Thread blocks and partitions are counted in CUDA grid dimensions y and z.
inline constexpr int32_t kMaxGridDimension = 65535;

// Decode partitions of a task with `entries` entries.
inline int32_t PartitionsOf(int32_t entries, int32_t partition) {
  return (entries + partition - 1) / partition;
}

}  // namespace kvd::kernels::cuda
