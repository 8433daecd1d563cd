// The CUDA backend's attention kernels against the CPU reference on fresh random pools, for the
// head shapes of the models kvd serves: decode rows (long caches split into partitions, empty
// heads), prefill rows (tiles over a cached prefix), batches mixing both, and the per-entry
// scores folded by max and by sum. Skipped without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <vector>

#include "tests/gpu/backend_pair.h"
#include "tests/support/paged_step.h"

namespace kvd::kernels {
namespace {

constexpr int32_t kBlockSize = 16;
constexpr int32_t kScoreStride = 10000;

// Kv head h holds cache_size + 13h cached entries (so that heads differ), or none in any head
// when cache_size is 0.
int32_t CachedLength(const SequenceSpec& spec, int32_t h) {
  return spec.cache_size == 0 ? 0 : spec.cache_size + 13 * h;
}

// A pool on one backend, filled with the same random entries as its twin on the other.
struct Pool {
  std::unique_ptr<DeviceBuffer> keys, values, votes;
  KvPool view;
};

class CudaAttentionTest : public BackendPairTest, public ::testing::WithParamInterface<HeadShape> {
 protected:
  Pool MakePool(Backend& backend, int32_t blocks, int32_t head_dim, const std::vector<float>& keys,
                const std::vector<float>& values, const std::vector<float>& votes) {
    Pool pool;
    const size_t entries = static_cast<size_t>(blocks) * kBlockSize;
    pool.keys = *backend.Allocate(entries * head_dim * sizeof(float));
    pool.values = *backend.Allocate(entries * head_dim * sizeof(float));
    pool.votes = *backend.Allocate(entries * sizeof(float));
    pool.view = KvPool{static_cast<float*>(pool.keys->data()),
                       static_cast<float*>(pool.values->data()),
                       static_cast<float*>(pool.votes->data()),
                       blocks,
                       kBlockSize,
                       head_dim};
    std::vector<KvSlot> slots(entries);
    for (size_t i = 0; i < entries; ++i) slots[i] = static_cast<KvSlot>(i);
    EXPECT_TRUE(
        backend.WriteKvSlots(pool.view, slots, keys.data(), values.data(), votes.data()).ok());
    return pool;
  }

  // Appends each sequence's new rows, runs attention on both backends, and compares outputs
  // and scores.
  void ExpectSameAttention(const std::vector<SequenceSpec>& specs) {
    const HeadShape shape = GetParam();
    const int32_t kv_heads = shape.kv_heads, head_dim = shape.head_dim;
    const PagedStep step = MakePagedStep(shape, kBlockSize, specs, CachedLength, random_);
    const int32_t total_rows = step.total_rows;
    const AttentionShape attention{shape.heads, kv_heads, head_dim,
                                   1.0f / std::sqrt(static_cast<float>(head_dim))};
    const int64_t score_values = static_cast<int64_t>(specs.size()) * kv_heads * kScoreStride;

    auto run = [&](Backend& backend) {
      Pool pool = MakePool(backend, step.blocks, head_dim, step.keys, step.values, step.votes);
      DeviceTensor tq = Put(backend, step.q, total_rows, shape.heads * head_dim);
      DeviceTensor tk = Put(backend, step.k, total_rows, kv_heads * head_dim);
      DeviceTensor tv = Put(backend, step.v, total_rows, kv_heads * head_dim);
      DeviceTensor out =
          Put(backend, std::vector<float>(step.q.size()), total_rows, shape.heads * head_dim);
      DeviceTensor scores =
          Put(backend, std::vector<float>(static_cast<size_t>(score_values)), 1, score_values);
      std::vector<std::vector<const int32_t*>> table_ptrs(specs.size());
      std::vector<SequenceKvRef> refs(specs.size());
      int32_t first_row = 0;
      for (size_t s = 0; s < specs.size(); ++s) {
        for (const auto& table : step.tables[s]) table_ptrs[s].push_back(table.data());
        refs[s] = SequenceKvRef{first_row, specs[s].rows, table_ptrs[s], step.cached[s]};
        if (specs[s].scores) {
          refs[s].scores = {scores.tensor.f32() + static_cast<int64_t>(s) * kv_heads * kScoreStride,
                            kScoreStride, specs[s].scores->first_row, specs[s].scores->reduce};
        }
        first_row += specs[s].rows;
      }
      backend.AppendKv(tk.tensor, tv.tensor, pool.view, refs);
      backend.Attention(tq.tensor, pool.view, refs, attention, out.tensor);
      return std::pair{Get(backend, out.tensor), Get(backend, scores.tensor)};
    };
    const auto [expected_out, expected_scores] = run(*cpu_);
    const auto [actual_out, actual_scores] = run(*cuda_);
    EXPECT_LE(RelativeError(actual_out, expected_out), 1e-5) << "seed " << seed_;
    EXPECT_LE(RelativeError(actual_scores, expected_scores), 1e-5) << "seed " << seed_;
    // Every sequence's rows, not just the whole: a wrong small sequence hides in a big norm.
    int32_t first_row = 0;
    const size_t row_size = static_cast<size_t>(shape.heads) * head_dim;
    for (size_t s = 0; s < specs.size(); ++s) {
      const auto rows = [&](const std::vector<float>& all) {
        return std::vector<float>(all.begin() + first_row * row_size,
                                  all.begin() + (first_row + specs[s].rows) * row_size);
      };
      EXPECT_LE(RelativeError(rows(actual_out), rows(expected_out)), 1e-5)
          << "sequence " << s << ", seed " << seed_;
      first_row += specs[s].rows;
    }
  }
};

TEST_P(CudaAttentionTest, DecodeRowsMatchTheCpu) {
  // Caches from a lone new entry to thousands of entries (split into several partitions).
  ExpectSameAttention({{1, 0, std::nullopt},
                       {1, 1, std::nullopt},
                       {1, 31, ScoreSpec{0, ScoreReduce::kSum}},
                       {1, 700, std::nullopt},
                       {1, 3000, ScoreSpec{0, ScoreReduce::kMax}}});
}

TEST_P(CudaAttentionTest, ALongCacheAloneSplitsAcrossTheDevice) {
  ExpectSameAttention({{1, 9000, ScoreSpec{0, ScoreReduce::kSum}}});
}

TEST_P(CudaAttentionTest, PrefillRowsMatchTheCpu) {
  ExpectSameAttention({{70, 100, ScoreSpec{10, ScoreReduce::kMax}},
                       {33, 0, std::nullopt},
                       {2, 5, ScoreSpec{0, ScoreReduce::kSum}},
                       {130, 0, ScoreSpec{0, ScoreReduce::kMax}}});
}

TEST_P(CudaAttentionTest, MixedBatchesMatchTheCpu) {
  ExpectSameAttention({{1, 45, ScoreSpec{0, ScoreReduce::kMax}},
                       {40, 260, std::nullopt},
                       {1, 0, std::nullopt},
                       {9, 3, ScoreSpec{8, ScoreReduce::kSum}}});
}

// Llama 3 / Mistral (group 4, head 128), Llama 3.2 1B (group 4, head 64), Qwen2 7B (group 7),
// multi-head attention with small heads, a group over 8 with head 256, and a head of 80.
INSTANTIATE_TEST_SUITE_P(Shapes, CudaAttentionTest,
                         ::testing::Values(HeadShape{8, 2, 128}, HeadShape{8, 2, 64},
                                           HeadShape{28, 4, 128}, HeadShape{4, 4, 32},
                                           HeadShape{16, 1, 256}, HeadShape{12, 2, 80}),
                         [](const auto& info) { return HeadShapeName(info.param); });

class CudaAttentionContractTest : public BackendPairTest {};

TEST_F(CudaAttentionContractTest, AHeadSizeTheKernelsDoNotTakeIsAnError) {
  for (const int32_t head_dim : {66, 260}) {
    std::vector<int32_t> table = {0};
    const std::vector<const int32_t*> tables = {table.data()};
    const std::vector<int32_t> cached = {0};
    const SequenceKvRef ref{0, 1, tables, cached};
    auto keys = *cuda_->Allocate(kBlockSize * head_dim * sizeof(float));
    auto values = *cuda_->Allocate(kBlockSize * head_dim * sizeof(float));
    auto votes = *cuda_->Allocate(kBlockSize * sizeof(float));
    const KvPool pool{static_cast<float*>(keys->data()),
                      static_cast<float*>(values->data()),
                      static_cast<float*>(votes->data()),
                      1,
                      kBlockSize,
                      head_dim};
    DeviceTensor q = Put(*cuda_, Random(head_dim), 1, head_dim);
    DeviceTensor out = Put(*cuda_, Random(head_dim), 1, head_dim);
    cuda_->AppendKv(q.tensor, q.tensor, pool, {&ref, 1});
    cuda_->Attention(q.tensor, pool, {&ref, 1}, {1, 1, head_dim, 1.0f}, out.tensor);
    const absl::Status status = cuda_->TakeError();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << head_dim << ": " << status;
  }
}

}  // namespace
}  // namespace kvd::kernels
