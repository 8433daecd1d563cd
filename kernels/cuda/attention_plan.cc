#include "kernels/cuda/attention_plan.h"

#include <algorithm>

namespace kvd::kernels::cuda {
namespace {

// Thread blocks per multiprocessor a decode launch aims for: enough resident warps to keep the
// memory system busy without splitting entries more than that needs.
constexpr int64_t kDecodeBlocksPerMultiprocessor = 3;

int32_t CeilDiv(int32_t a, int32_t b) { return (a + b - 1) / b; }

// Decode thread blocks for partitions of `partition` entries.
int64_t DecodeBlocks(const std::vector<AttentionTask>& decode, int32_t head_chunks,
                     int32_t partition) {
  int64_t blocks = 0;
  for (const AttentionTask& task : decode) {
    blocks += int64_t{head_chunks} * PartitionsOf(task.cached_length + 1, partition);
  }
  return blocks;
}

}  // namespace

AttentionPlan PlanAttention(const KvPool& pool, std::span<const SequenceKvRef> sequences,
                            const AttentionShape& shape, int32_t multiprocessors) {
  AttentionPlan plan;
  const int32_t group = shape.num_heads / shape.num_kv_heads;
  int32_t decode_max_entries = 0;
  for (const SequenceKvRef& seq : sequences) {
    if (seq.num_rows == 0) continue;
    for (int32_t h = 0; h < shape.num_kv_heads; ++h) {
      const int32_t entries = seq.cached_lengths[h] + seq.num_rows;
      AttentionTask task{.q_first_row = seq.first_row,
                         .num_rows = seq.num_rows,
                         .kv_head = h,
                         .cached_length = seq.cached_lengths[h],
                         .table_offset = static_cast<int64_t>(plan.tables.size())};
      plan.tables.insert(plan.tables.end(), seq.block_tables[h],
                         seq.block_tables[h] + CeilDiv(entries, pool.block_size));
      if (seq.num_rows == 1) {
        plan.decode.push_back(task);
        decode_max_entries = std::max(decode_max_entries, entries);
      } else {
        plan.prefill.push_back(task);
        plan.prefill_tiles =
            std::max(plan.prefill_tiles, CeilDiv(seq.num_rows * group, kQueryTileVectors));
      }
      if (seq.scores.scores != nullptr && seq.scores.first_row < seq.num_rows) {
        plan.scores.push_back(
            {.rows = task,
             .scores = seq.scores.scores + static_cast<int64_t>(h) * seq.scores.stride,
             .first_row = seq.scores.first_row,
             .reduce_max = seq.scores.reduce == ScoreReduce::kMax ? 1 : 0});
        plan.score_entry_tiles = std::max(plan.score_entry_tiles, CeilDiv(entries, kEntryTile));
        plan.score_row_blocks =
            std::max(plan.score_row_blocks,
                     CeilDiv(seq.num_rows - seq.scores.first_row, kScoreRowsPerBlock));
      }
    }
  }
  if (plan.decode.empty()) return plan;
  int32_t partition = kMinPartition;
  while (partition < kMaxPartition && partition < decode_max_entries) partition *= 2;
  const int32_t head_chunks = CeilDiv(group, DecodeHeadsPerBlock(group));
  const int64_t target = kDecodeBlocksPerMultiprocessor * std::max(multiprocessors, 1);
  while (partition > kMinPartition && DecodeBlocks(plan.decode, head_chunks, partition) < target) {
    partition /= 2;
  }
  while (PartitionsOf(decode_max_entries, partition) > kMaxGridDimension) partition *= 2;
  plan.decode_partition = partition;
  plan.decode_partitions = PartitionsOf(decode_max_entries, partition);
  // Each task's partial results take as many partitions as it has, not the most any has.
  for (AttentionTask& task : plan.decode) {
    task.first_partial = plan.decode_partial_partitions;
    plan.decode_partial_partitions += PartitionsOf(task.cached_length + 1, partition);
  }
  return plan;
}

}  // namespace kvd::kernels::cuda
