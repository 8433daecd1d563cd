// The CUDA backend's attention planning (host code, runs without a device): which rows go to
// the decode and prefill kernels, how decode entries split into partitions, what gets scored.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cuda/attention_plan.h"

namespace kvd::kernels::cuda {
namespace {

constexpr int32_t kBlockSize = 16;

// Sequences of `rows` new rows over `cached` entries per kv head, each head's blocks numbered
// from a running counter.
struct Batch {
  Batch(const std::vector<int32_t>& rows, const std::vector<std::vector<int32_t>>& cached) {
    int32_t first_row = 0;
    int32_t next_block = 0;
    tables.resize(rows.size());
    table_ptrs.resize(rows.size());
    lengths = cached;
    for (size_t s = 0; s < rows.size(); ++s) {
      for (int32_t length : cached[s]) {
        std::vector<int32_t> table;
        for (int32_t b = 0; b < (length + rows[s] + kBlockSize - 1) / kBlockSize; ++b) {
          table.push_back(next_block++);
        }
        tables[s].push_back(table);
      }
      for (const auto& table : tables[s]) table_ptrs[s].push_back(table.data());
      refs.push_back({first_row, rows[s], table_ptrs[s], lengths[s]});
      first_row += rows[s];
    }
  }
  std::vector<std::vector<std::vector<int32_t>>> tables;
  std::vector<std::vector<const int32_t*>> table_ptrs;
  std::vector<std::vector<int32_t>> lengths;
  std::vector<SequenceKvRef> refs;
};

const KvPool kPool{.num_blocks = 1 << 20, .block_size = kBlockSize, .head_dim = 64};
const AttentionShape kShape{.num_heads = 8, .num_kv_heads = 2, .head_dim = 64, .scale = 0.125f};

TEST(CudaAttentionPlanTest, OneRowGoesToDecodeAndMoreToPrefillPerKvHead) {
  Batch batch({1, 40, 0}, {{10, 0}, {5, 300}, {7, 7}});
  const AttentionPlan plan = PlanAttention(kPool, batch.refs, kShape, 132);
  ASSERT_EQ(plan.decode.size(), 2u);
  ASSERT_EQ(plan.prefill.size(), 2u);
  EXPECT_EQ(plan.decode[0].kv_head, 0);
  EXPECT_EQ(plan.decode[0].cached_length, 10);
  EXPECT_EQ(plan.decode[1].cached_length, 0);
  EXPECT_EQ(plan.prefill[0].q_first_row, 1);
  EXPECT_EQ(plan.prefill[0].num_rows, 40);
  EXPECT_EQ(plan.prefill[1].kv_head, 1);
  EXPECT_EQ(plan.prefill[1].cached_length, 300);
  // 40 rows of a group of 4 are 160 query vectors: 5 tiles.
  EXPECT_EQ(plan.prefill_tiles, 5);
  EXPECT_TRUE(plan.scores.empty());
}

TEST(CudaAttentionPlanTest, TablesAreFlattenedWithEachHeadsBlocksForItsLength) {
  Batch batch({1, 3}, {{15, 16}, {0, 40}});
  const AttentionPlan plan = PlanAttention(kPool, batch.refs, kShape, 132);
  std::vector<const AttentionTask*> tasks;
  for (const auto& t : plan.decode) tasks.push_back(&t);
  for (const auto& t : plan.prefill) tasks.push_back(&t);
  // 16 entries: one block; 17: two; 3: one; 43: three.
  const std::vector<int32_t> blocks = {1, 2, 1, 3};
  int64_t offset = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const size_t s = i / 2, h = i % 2;
    EXPECT_EQ(tasks[i]->table_offset, offset) << i;
    for (int32_t b = 0; b < blocks[i]; ++b) {
      EXPECT_EQ(plan.tables[offset + b], batch.tables[s][h][b]) << i;
    }
    offset += blocks[i];
  }
  EXPECT_EQ(static_cast<int64_t>(plan.tables.size()), offset);
}

TEST(CudaAttentionPlanTest, ScoredSequencesGetOneScoreTaskPerKvHead) {
  Batch batch({1, 100, 4}, {{20, 30}, {0, 0}, {9, 9}});
  std::vector<float> scores(3 * 2 * 256);
  batch.refs[0].scores = {scores.data(), 256, 0, ScoreReduce::kSum};
  batch.refs[1].scores = {scores.data() + 512, 256, 10, ScoreReduce::kMax};
  batch.refs[2].scores = {scores.data() + 1024, 256, 4, ScoreReduce::kMax};  // no row scored
  const AttentionPlan plan = PlanAttention(kPool, batch.refs, kShape, 132);
  ASSERT_EQ(plan.scores.size(), 4u);
  EXPECT_EQ(plan.scores[0].scores, scores.data());
  EXPECT_EQ(plan.scores[1].scores, scores.data() + 256);
  EXPECT_EQ(plan.scores[0].reduce_max, 0);
  EXPECT_EQ(plan.scores[2].scores, scores.data() + 512);
  EXPECT_EQ(plan.scores[3].scores, scores.data() + 768);
  EXPECT_EQ(plan.scores[3].reduce_max, 1);
  EXPECT_EQ(plan.scores[3].first_row, 10);
  EXPECT_EQ(plan.scores[3].rows.num_rows, 100);
  // 100 entries are 4 tiles of 32; rows 10..99 are 2 blocks of 64.
  EXPECT_EQ(plan.score_entry_tiles, 4);
  EXPECT_EQ(plan.score_row_blocks, 2);
}

TEST(CudaAttentionPlanTest, ABigBatchKeepsEachCacheInOnePartition) {
  const AttentionShape shape{.num_heads = 32, .num_kv_heads = 8, .head_dim = 64, .scale = 0.125f};
  Batch batch(std::vector<int32_t>(64, 1),
              std::vector<std::vector<int32_t>>(64, std::vector<int32_t>(8, 527)));
  const AttentionPlan plan = PlanAttention(kPool, batch.refs, shape, 132);
  EXPECT_EQ(plan.decode.size(), 512u);
  EXPECT_GE(plan.decode_partition, 528);
  EXPECT_EQ(plan.decode_partitions, 1);
}

TEST(CudaAttentionPlanTest, ASmallBatchSplitsLongCachesToFillTheDevice) {
  const AttentionShape shape{.num_heads = 32, .num_kv_heads = 8, .head_dim = 64, .scale = 0.125f};
  Batch batch({1}, {std::vector<int32_t>(8, 20000)});
  const AttentionPlan plan = PlanAttention(kPool, batch.refs, shape, 132);
  const int32_t partition = plan.decode_partition;
  EXPECT_EQ(partition & (partition - 1), 0) << partition;
  EXPECT_GE(partition, kMinPartition);
  EXPECT_LT(partition, kMaxPartition);
  // Enough blocks for three per multiprocessor, but not twice as many as that needs.
  EXPECT_GE(8 * plan.decode_partitions, 3 * 132);
  EXPECT_LT(8 * PartitionsOf(20001, partition * 2), 3 * 132);
  EXPECT_EQ(plan.decode_partitions, PartitionsOf(20001, partition));
}

TEST(CudaAttentionPlanTest, EachDecodeTaskTakesPartialResultsForItsOwnPartitionsOnly) {
  // One long cache among short ones: the short ones need one partition each, not the long
  // one's count.
  Batch batch({1, 1, 1}, {{5000, 10}, {3, 0}, {700, 64}});
  const AttentionPlan plan = PlanAttention(kPool, batch.refs, kShape, 1000);
  const int32_t partition = plan.decode_partition;
  ASSERT_GT(plan.decode_partitions, 1);
  int64_t next = 0;
  for (const AttentionTask& task : plan.decode) {
    EXPECT_EQ(task.first_partial, next);
    next += PartitionsOf(task.cached_length + 1, partition);
  }
  EXPECT_EQ(plan.decode_partial_partitions, next);
  EXPECT_LT(plan.decode_partial_partitions,
            static_cast<int64_t>(plan.decode.size()) * plan.decode_partitions);
}

TEST(CudaAttentionPlanTest, ShortCachesKeepTheSmallestPartition) {
  Batch batch({1}, {{3, 0}});
  const AttentionPlan plan = PlanAttention(kPool, batch.refs, kShape, 132);
  EXPECT_EQ(plan.decode_partition, kMinPartition);
  EXPECT_EQ(plan.decode_partitions, 1);
}

TEST(CudaAttentionPlanTest, DecodeBlocksTakeTheGroupRoundedUpToAPowerOfTwoUpToEight) {
  EXPECT_EQ(DecodeHeadsPerBlock(1), 1);
  EXPECT_EQ(DecodeHeadsPerBlock(3), 4);
  EXPECT_EQ(DecodeHeadsPerBlock(4), 4);
  EXPECT_EQ(DecodeHeadsPerBlock(7), 8);
  EXPECT_EQ(DecodeHeadsPerBlock(16), 8);
}

}  // namespace
}  // namespace kvd::kernels::cuda
