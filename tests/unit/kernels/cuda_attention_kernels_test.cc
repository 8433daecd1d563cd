// The CUDA backend's attention kernels (kernels/cuda/*_kernels.cuh) run on the CPU through the
// CUDA emulation, planned and sequenced as CudaBackend::Attention does (decode and merge,
// prefill, then the scores from the rows' log-sum-exps), against the CPU reference: for the head
// shapes of the models kvd serves, over random paged pools with shuffled block tables and
// per-head cache lengths. Needs no device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/kv_entries.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cuda/attention_plan.h"
#include "kernels/cuda/decode_attention.cuh"
#include "tests/support/kernel_test_values.h"
#include "tests/support/paged_step.h"
#include "tests/unit/kernels/cuda_emulation/attention_launches.h"

namespace kvd::kernels::cuda {
namespace {

constexpr int32_t kBlockSize = 16;
constexpr int32_t kScoreStride = 512;
// Multiprocessors to plan for: many make decode partitions of kMinPartition entries, so that a
// task has several and the merge runs; one makes a partition hold a whole task.
constexpr int32_t kManyMultiprocessors = 1000;
constexpr int32_t kOneMultiprocessor = 1;

// Kv head h holds cache_size - 7h cached entries (none below 0), except every third head from
// the second, which holds none.
int32_t CachedLength(const SequenceSpec& spec, int32_t h) {
  return h % 3 == 1 ? 0 : std::max(0, spec.cache_size - 7 * h);
}

std::vector<float> NaNs(size_t n) {
  return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
}

class CudaAttentionKernelsTest : public ::testing::TestWithParam<HeadShape> {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    random_.seed(seed_);
  }

  // Appends each sequence's new rows to a random pool, runs attention through the emulated
  // kernels and the CPU reference, and compares outputs and scores.
  void ExpectSameAttention(const std::vector<SequenceSpec>& specs, int32_t multiprocessors,
                           int32_t expected_partitions) {
    const HeadShape shape = GetParam();
    const int32_t kv_heads = shape.kv_heads, head_dim = shape.head_dim;
    PagedStep step = MakePagedStep(shape, kBlockSize, specs, CachedLength, random_);
    for (size_t s = 0; s < specs.size(); ++s) {
      for (const int32_t cached : step.cached[s]) ASSERT_LE(cached + specs[s].rows, kScoreStride);
    }
    const int32_t total_rows = step.total_rows;
    const KvPool pool{step.keys.data(), step.values.data(), step.votes.data(),
                      step.blocks,      kBlockSize,         head_dim};
    const int64_t q_cols = int64_t{shape.heads} * head_dim;
    const AttentionShape attention{shape.heads, kv_heads, head_dim,
                                   1.0f / std::sqrt(static_cast<float>(head_dim))};

    // The same sequences twice, each set folding scores into its own buffer.
    const size_t score_values = specs.size() * kv_heads * kScoreStride;
    std::vector<float> expected_scores(score_values), actual_scores(score_values);
    std::vector<std::vector<const int32_t*>> table_ptrs(specs.size());
    std::vector<SequenceKvRef> expected_refs(specs.size()), actual_refs(specs.size());
    int32_t first_row = 0;
    for (size_t s = 0; s < specs.size(); ++s) {
      for (const auto& table : step.tables[s]) table_ptrs[s].push_back(table.data());
      expected_refs[s] = SequenceKvRef{first_row, specs[s].rows, table_ptrs[s], step.cached[s]};
      actual_refs[s] = expected_refs[s];
      if (specs[s].scores) {
        const int64_t offset = static_cast<int64_t>(s) * kv_heads * kScoreStride;
        expected_refs[s].scores = {expected_scores.data() + offset, kScoreStride,
                                   specs[s].scores->first_row, specs[s].scores->reduce};
        actual_refs[s].scores = {actual_scores.data() + offset, kScoreStride,
                                 specs[s].scores->first_row, specs[s].scores->reduce};
      }
      first_row += specs[s].rows;
    }
    cpu::AppendKvEntries(Tensor{step.k.data(), DType::kF32, total_rows, kv_heads * head_dim},
                         Tensor{step.v.data(), DType::kF32, total_rows, kv_heads * head_dim}, pool,
                         expected_refs);

    std::vector<float> expected_out(step.q.size());
    cpu::ThreadPool threads(1);
    cpu::PagedAttention(Tensor{step.q.data(), DType::kF32, total_rows, q_cols}, pool, expected_refs,
                        attention, Tensor{expected_out.data(), DType::kF32, total_rows, q_cols},
                        threads);

    // CudaBackend::Attention's sequence, over host memory that starts as NaNs.
    const AttentionPlan plan = PlanAttention(pool, actual_refs, attention, multiprocessors);
    if (!plan.decode.empty()) {
      ASSERT_EQ(plan.decode_partitions, expected_partitions);
    }
    std::vector<float> actual_out = NaNs(step.q.size());
    std::vector<float> lse, partials;
    if (!plan.scores.empty()) lse = NaNs(static_cast<size_t>(total_rows) * shape.heads);
    if (plan.decode_partitions > 1) {
      partials =
          NaNs(static_cast<size_t>(DecodePartialFloats(plan.decode_partial_partitions, attention)));
    }
    float* lse_data = lse.empty() ? nullptr : lse.data();
    float* partials_data = partials.empty() ? nullptr : partials.data();
    if (!plan.decode.empty()) {
      ASSERT_TRUE(emulation::EmulateDecodeAttention(step.q.data(), pool, plan.decode.data(),
                                                    static_cast<int32_t>(plan.decode.size()),
                                                    plan.tables.data(), attention, q_cols,
                                                    plan.decode_partition, plan.decode_partitions,
                                                    partials_data, actual_out.data(), lse_data)
                      .ok())
          << "seed " << seed_;
    }
    if (!plan.prefill.empty()) {
      const absl::Status status = emulation::EmulatePrefillAttention(
          step.q.data(), pool, plan.prefill.data(), static_cast<int32_t>(plan.prefill.size()),
          plan.prefill_tiles, plan.tables.data(), attention, q_cols, actual_out.data(), lse_data);
      ASSERT_TRUE(status.ok()) << status << ", seed " << seed_;
    }
    if (!plan.scores.empty()) {
      const absl::Status status = emulation::EmulateAttentionScores(
          step.q.data(), pool, plan.scores.data(), static_cast<int32_t>(plan.scores.size()),
          plan.score_entry_tiles, plan.score_row_blocks, plan.tables.data(), attention, q_cols,
          lse_data);
      ASSERT_TRUE(status.ok()) << status << ", seed " << seed_;
    }

    EXPECT_LE(RelativeError(actual_out, expected_out), 1e-5) << "seed " << seed_;
    EXPECT_LE(RelativeError(actual_scores, expected_scores), 1e-5) << "seed " << seed_;
    // Every sequence, not just the whole: a wrong small sequence hides in a big norm.
    for (size_t s = 0; s < specs.size(); ++s) {
      const auto rows_of = [&](std::span<const float> all) {
        return all.subspan(static_cast<size_t>(expected_refs[s].first_row * q_cols),
                           static_cast<size_t>(specs[s].rows * q_cols));
      };
      EXPECT_LE(RelativeError(rows_of(actual_out), rows_of(expected_out)), 1e-5)
          << "sequence " << s << ", seed " << seed_;
      const auto scores_of = [&](std::span<const float> all) {
        return all.subspan(s * kv_heads * kScoreStride,
                           static_cast<size_t>(kv_heads) * kScoreStride);
      };
      EXPECT_LE(RelativeError(scores_of(actual_scores), scores_of(expected_scores)), 1e-5)
          << "scores of sequence " << s << ", seed " << seed_;
    }
  }

  uint32_t seed_ = 0;
  std::mt19937 random_;
};

TEST_P(CudaAttentionKernelsTest, DecodeRowsOverSeveralPartitionsMatchTheCpu) {
  // 64, 65, 129 and 300 entries make one to five partitions of 64; the merge joins them.
  ExpectSameAttention({{1, 0, std::nullopt},
                       {1, 63, ScoreSpec{0, ScoreReduce::kSum}},
                       {1, 1, std::nullopt},
                       {1, 128, std::nullopt},
                       {1, 299, ScoreSpec{0, ScoreReduce::kMax}},
                       {1, 64, std::nullopt}},
                      kManyMultiprocessors, /*expected_partitions=*/5);
}

TEST_P(CudaAttentionKernelsTest, DecodeRowsInOnePartitionMatchTheCpu) {
  ExpectSameAttention({{1, 0, ScoreSpec{0, ScoreReduce::kMax}},
                       {1, 200, ScoreSpec{0, ScoreReduce::kSum}},
                       {1, 33, std::nullopt}},
                      kOneMultiprocessor, /*expected_partitions=*/1);
}

TEST_P(CudaAttentionKernelsTest, PrefillRowsMatchTheCpu) {
  // 66 scored rows take two row blocks of the score kernel; the first 10 of 70 are not scored.
  ExpectSameAttention({{70, 100, ScoreSpec{10, ScoreReduce::kMax}},
                       {33, 0, std::nullopt},
                       {2, 5, ScoreSpec{0, ScoreReduce::kSum}},
                       {66, 20, ScoreSpec{0, ScoreReduce::kSum}}},
                      kManyMultiprocessors, /*expected_partitions=*/0);
}

TEST_P(CudaAttentionKernelsTest, MixedBatchesMatchTheCpu) {
  ExpectSameAttention({{1, 45, ScoreSpec{0, ScoreReduce::kMax}},
                       {40, 160, std::nullopt},
                       {1, 0, std::nullopt},
                       {9, 3, ScoreSpec{8, ScoreReduce::kSum}}},
                      kManyMultiprocessors, /*expected_partitions=*/1);
}

// Llama 3.2 1B (group 4, head 64), Qwen2 7B (group 7, head 128), multi-head attention with
// small heads, a group over 8 with head 256, and a head of 80.
INSTANTIATE_TEST_SUITE_P(Shapes, CudaAttentionKernelsTest,
                         ::testing::Values(HeadShape{8, 2, 64}, HeadShape{28, 4, 128},
                                           HeadShape{4, 4, 32}, HeadShape{16, 1, 256},
                                           HeadShape{12, 2, 80}),
                         [](const auto& info) { return HeadShapeName(info.param); });

}  // namespace
}  // namespace kvd::kernels::cuda
