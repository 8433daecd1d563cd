// The CUDA backend against the CPU reference: every op on random inputs (fresh each run, seed
// printed on failure), and greedy generation of the bundled model. Skipped without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "engine/kv_cache.h"
#include "engine/model.h"
#include "kernels/backend.h"
#include "tests/gpu/backend_pair.h"
#include "tests/unit/engine/reference_model.h"

namespace kvd::kernels {
namespace {

class CudaBackendTest : public BackendPairTest {
 protected:
  void ExpectHalfWeightsCloseToTheCpu(DType dtype);
  void ExpectHalfGenerationCloseToTheCpu(DType dtype);
};

TEST_F(CudaBackendTest, RowOpsMatchTheCpu) {
  constexpr int64_t kRows = 37, kCols = 96, kHeads = 3;
  const std::vector<float> x = Random(kRows * kCols), y = Random(kRows * kCols);
  const std::vector<float> weight = Random(kCols), table = Random(50 * kCols);
  std::vector<int32_t> indices(kRows), positions(kRows);
  for (int64_t i = 0; i < kRows; ++i) {
    indices[i] = static_cast<int32_t>(random_() % 50);
    positions[i] = static_cast<int32_t>(random_() % 4000);
  }
  std::vector<float> inv_freq(kCols / kHeads / 2);
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    inv_freq[i] = std::pow(10000.0f, -2.0f * i / (kCols / kHeads));
  }
  auto run = [&](Backend& b) {
    std::vector<std::vector<float>> results;
    DeviceTensor tx = Put(b, x, kRows, kCols), ty = Put(b, y, kRows, kCols);
    DeviceTensor tw = Put(b, weight, 1, kCols), tt = Put(b, table, 50, kCols);
    DeviceTensor out = Put(b, std::vector<float>(kRows * kCols), kRows, kCols);
    b.GatherRows(tt.tensor, indices, out.tensor);
    results.push_back(Get(b, out.tensor));
    b.RmsNorm(tx.tensor, tw.tensor, 1e-5f, out.tensor);
    results.push_back(Get(b, out.tensor));
    b.SiluMul(tx.tensor, ty.tensor, out.tensor);
    results.push_back(Get(b, out.tensor));
    b.Add(tx.tensor, ty.tensor);
    results.push_back(Get(b, tx.tensor));
    b.ApplyRope(tx.tensor, kHeads, positions, inv_freq);
    results.push_back(Get(b, tx.tensor));
    return results;
  };
  const auto expected = run(*cpu_), actual = run(*cuda_);
  const char* names[] = {"GatherRows", "RmsNorm", "SiluMul", "Add", "ApplyRope"};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_LE(RelativeError(actual[i], expected[i]), 1e-5) << names[i] << " seed " << seed_;
  }
}

TEST_F(CudaBackendTest, LinearMatchesTheCpu) {
  constexpr int64_t kRows = 29, kIn = 160, kOut = 72;
  const std::vector<float> x = Random(kRows * kIn), w = Random(kOut * kIn, 0.1f);
  const std::vector<float> bias = Random(kOut);
  auto run = [&](Backend& b) {
    DeviceTensor tx = Put(b, x, kRows, kIn), tb = Put(b, bias, 1, kOut);
    Tensor host_w{const_cast<float*>(w.data()), DType::kF32, kOut, kIn};
    PreparedWeight pw = *b.PrepareWeight(host_w);
    DeviceTensor out = Put(b, std::vector<float>(kRows * kOut), kRows, kOut);
    b.Linear(tx.tensor, pw.tensor, &tb.tensor, out.tensor);
    return Get(b, out.tensor);
  };
  EXPECT_LE(RelativeError(run(*cuda_), run(*cpu_)), 1e-5) << "seed " << seed_;
}

// A projection and an embedding gather with 16-bit weights (`dtype`) against the CPU's f32.
void CudaBackendTest::ExpectHalfWeightsCloseToTheCpu(DType dtype) {
  auto half = CreateBackend("cuda", {.weight_dtype = dtype});
  ASSERT_TRUE(half.ok()) << half.status();
  constexpr int64_t kRows = 29, kIn = 160, kOut = 72, kVocab = 50;
  const std::vector<float> x = Random(kRows * kIn), w = Random(kOut * kIn, 0.1f);
  const std::vector<float> table = Random(kVocab * kIn);
  std::vector<int32_t> indices(kRows);
  for (int32_t& i : indices) i = static_cast<int32_t>(random_() % kVocab);
  auto run = [&](Backend& b) {
    DeviceTensor tx = Put(b, x, kRows, kIn);
    PreparedWeight pw = *b.PrepareWeight({const_cast<float*>(w.data()), DType::kF32, kOut, kIn});
    PreparedWeight pt =
        *b.PrepareWeight({const_cast<float*>(table.data()), DType::kF32, kVocab, kIn});
    DeviceTensor out = Put(b, std::vector<float>(kRows * kOut), kRows, kOut);
    DeviceTensor rows = Put(b, std::vector<float>(kRows * kIn), kRows, kIn);
    b.Linear(tx.tensor, pw.tensor, nullptr, out.tensor);
    b.GatherRows(pt.tensor, indices, rows.tensor);
    return std::pair{Get(b, out.tensor), Get(b, rows.tensor)};
  };
  const auto [expected_out, expected_rows] = run(*cpu_);
  const auto [actual_out, actual_rows] = run(**half);
  EXPECT_LE(RelativeError(actual_out, expected_out), 1e-2) << "seed " << seed_;
  EXPECT_LE(RelativeError(actual_rows, expected_rows), 1e-2) << "seed " << seed_;
  EXPECT_TRUE((*half)->TakeError().ok());
}

TEST_F(CudaBackendTest, Bf16WeightsStayWithinBf16OfTheCpu) {
  ExpectHalfWeightsCloseToTheCpu(DType::kBF16);
}

TEST_F(CudaBackendTest, F16WeightsStayWithinF16OfTheCpu) {
  ExpectHalfWeightsCloseToTheCpu(DType::kF16);
}

// With no type asked for, a matrix keeps its checkpoint's type and a vector becomes f32.
TEST_F(CudaBackendTest, WeightsKeepTheCheckpointTypeWhenNoneIsAsked) {
  std::vector<float> zeros(4 * 8);  // zero bits are a zero in every type
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    auto matrix = cuda_->PrepareWeight({zeros.data(), dtype, 4, 8});
    auto vector = cuda_->PrepareWeight({zeros.data(), dtype, 1, 8});
    ASSERT_TRUE(matrix.ok() && vector.ok()) << DTypeName(dtype);
    EXPECT_EQ(matrix->tensor.dtype, dtype) << DTypeName(dtype);
    EXPECT_EQ(vector->tensor.dtype, DType::kF32) << DTypeName(dtype);
  }
}

// Many ops queued back to back, each staging its own indices, more of them each time so that the
// staging buffers grow with earlier copies still queued; then every result read back.
TEST_F(CudaBackendTest, QueuedOpsEachSeeTheirOwnStagedArrays) {
  constexpr int64_t kCols = 64, kVocab = 100, kOps = 12;
  const std::vector<float> table = Random(kVocab * kCols);
  std::vector<std::vector<int32_t>> indices(kOps);
  for (int64_t op = 0; op < kOps; ++op) {
    indices[op].resize(static_cast<size_t>(1) << op);
    for (int32_t& i : indices[op]) i = static_cast<int32_t>(random_() % kVocab);
  }
  auto run = [&](Backend& b) {
    DeviceTensor tt = Put(b, table, kVocab, kCols);
    std::vector<DeviceTensor> outs;
    for (const std::vector<int32_t>& op_indices : indices) {
      const auto rows = static_cast<int64_t>(op_indices.size());
      outs.push_back(Put(b, std::vector<float>(rows * kCols), rows, kCols));
    }
    for (int64_t op = 0; op < kOps; ++op) b.GatherRows(tt.tensor, indices[op], outs[op].tensor);
    std::vector<std::vector<float>> results;
    for (const DeviceTensor& out : outs) results.push_back(Get(b, out.tensor));
    return results;
  };
  const auto expected = run(*cpu_), actual = run(*cuda_);
  for (int64_t op = 0; op < kOps; ++op) EXPECT_EQ(actual[op], expected[op]) << "op " << op;
}

// A pool per backend, holding the same random entries.
struct Pools {
  std::unique_ptr<engine::KvBlockPool> cpu, cuda;
};

// The CUDA kernels read f32 keys and values only: a bf16 pool is refused when it is created,
// before any kernel could read it as f32.
TEST_F(CudaBackendTest, RefusesABf16KvCache) {
  const absl::Status status = cuda_->CheckKvCacheType(DType::kBF16);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("f32 only"), std::string::npos) << status;
  EXPECT_EQ(engine::KvBlockPool::Create(
                *cuda_, {.num_blocks = 4, .block_size = 16, .head_dim = 64, .dtype = DType::kBF16})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(CudaBackendTest, KvEntriesAndPagedAttentionMatchTheCpu) {
  constexpr int32_t kHeads = 8, kKvHeads = 2, kHeadDim = 64, kBlock = 16, kBlocks = 64;
  const engine::KvPoolOptions options{
      .num_blocks = kBlocks, .block_size = kBlock, .head_dim = kHeadDim};
  Pools pools{*engine::KvBlockPool::Create(*cpu_, options),
              *engine::KvBlockPool::Create(*cuda_, options)};
  // Every slot gets a random entry (votes too), written to both pools.
  const int64_t slots_count = int64_t{kBlocks} * kBlock;
  std::vector<KvSlot> slots(slots_count);
  for (int64_t i = 0; i < slots_count; ++i) slots[i] = i;
  const std::vector<float> keys = Random(slots_count * kHeadDim, 0.5f);
  const std::vector<float> values = Random(slots_count * kHeadDim);
  std::vector<float> votes = Random(slots_count, 0.5f);
  for (float& v : votes) v = std::abs(v);
  for (engine::KvBlockPool* pool : {pools.cpu.get(), pools.cuda.get()}) {
    EXPECT_TRUE(pool->backend()
                    .WriteKvSlots(pool->storage(), slots, keys.data(), values.data(), votes.data())
                    .ok());
  }
  // Copies between slots, then reads back.
  const std::vector<KvSlot> from = {3, 100, 517}, to = {900, 901, 2};
  for (engine::KvBlockPool* pool : {pools.cpu.get(), pools.cuda.get()}) {
    EXPECT_TRUE(pool->backend().CopyKvSlots(pool->storage(), from, to).ok());
  }
  std::vector<float> read_keys[2], read_values[2], read_votes[2];
  int side = 0;
  for (engine::KvBlockPool* pool : {pools.cpu.get(), pools.cuda.get()}) {
    read_keys[side].resize(keys.size());
    read_values[side].resize(values.size());
    read_votes[side].resize(votes.size());
    EXPECT_TRUE(pool->backend()
                    .ReadKvSlots(pool->storage(), slots, read_keys[side].data(),
                                 read_values[side].data(), read_votes[side].data())
                    .ok());
    ++side;
  }
  EXPECT_EQ(read_keys[0], read_keys[1]);
  EXPECT_EQ(read_values[0], read_values[1]);
  EXPECT_EQ(read_votes[0], read_votes[1]);

  // Three sequences with per-head lengths (one empty head), new rows appended, then attention
  // with scores (max for one, sum for another).
  const std::vector<std::vector<int32_t>> lengths = {{40, 0}, {130, 77}, {5, 200}};
  const std::vector<int32_t> new_rows = {1, 7, 3};
  std::vector<std::vector<std::vector<int32_t>>> tables(3);
  int32_t next_block = 0;
  for (size_t s = 0; s < 3; ++s) {
    for (int32_t h = 0; h < kKvHeads; ++h) {
      const int32_t needed = (lengths[s][h] + new_rows[s] + kBlock - 1) / kBlock;
      std::vector<int32_t> table;
      for (int32_t b = 0; b < needed; ++b) table.push_back(next_block++ % kBlocks);
      tables[s].push_back(table);
    }
  }
  int32_t total_rows = 0;
  for (int32_t rows : new_rows) total_rows += rows;
  const std::vector<float> q = Random(int64_t{total_rows} * kHeads * kHeadDim);
  const std::vector<float> k = Random(int64_t{total_rows} * kKvHeads * kHeadDim, 0.5f);
  const std::vector<float> v = Random(int64_t{total_rows} * kKvHeads * kHeadDim);
  const int32_t stride = 256;
  const AttentionShape shape{kHeads, kKvHeads, kHeadDim, 1.0f / 8.0f};
  auto run = [&](Backend& b, engine::KvBlockPool& pool) {
    DeviceTensor tq = Put(b, q, total_rows, kHeads * kHeadDim);
    DeviceTensor tk = Put(b, k, total_rows, kKvHeads * kHeadDim);
    DeviceTensor tv = Put(b, v, total_rows, kKvHeads * kHeadDim);
    DeviceTensor out = Put(b, std::vector<float>(q.size()), total_rows, kHeads * kHeadDim);
    DeviceTensor scores = Put(b, std::vector<float>(3 * kKvHeads * stride), 3, kKvHeads * stride);
    std::vector<std::vector<const int32_t*>> table_ptrs(3);
    std::vector<SequenceKvRef> refs(3);
    int32_t first_row = 0;
    for (size_t s = 0; s < 3; ++s) {
      for (int32_t h = 0; h < kKvHeads; ++h) table_ptrs[s].push_back(tables[s][h].data());
      refs[s] = SequenceKvRef{first_row, new_rows[s], table_ptrs[s], lengths[s]};
      if (s > 0) {
        refs[s].scores = {scores.tensor.f32() + s * kKvHeads * stride, stride, s == 1 ? 2 : 0,
                          s == 1 ? ScoreReduce::kMax : ScoreReduce::kSum};
      }
      first_row += new_rows[s];
    }
    b.AppendKv(tk.tensor, tv.tensor, pool.storage(), refs);
    b.Attention(tq.tensor, pool.storage(), refs, shape, out.tensor);
    return std::pair{Get(b, out.tensor), Get(b, scores.tensor)};
  };
  const auto [expected_out, expected_scores] = run(*cpu_, *pools.cpu);
  const auto [actual_out, actual_scores] = run(*cuda_, *pools.cuda);
  EXPECT_LE(RelativeError(actual_out, expected_out), 1e-5) << "seed " << seed_;
  EXPECT_LE(RelativeError(actual_scores, expected_scores), 1e-5) << "seed " << seed_;
}

// The bundled model's greedy continuation (`length` tokens) of a random prompt (seeded by seed).
std::vector<int32_t> Generate(engine::Model& model, uint32_t seed, int length = 32) {
  const auto& config = model.config();
  auto pool = *engine::KvBlockPool::Create(
      model.backend(),
      {.num_blocks = 64 * config.num_layers * config.num_kv_heads, .head_dim = config.head_dim});
  engine::SequenceKv kv(config.num_layers, config.num_kv_heads);
  std::vector<int32_t> tokens = {869};
  std::uniform_int_distribution<int32_t> letter('a', 'z');
  std::mt19937 prompt_random(seed);
  for (int i = 0; i < 200; ++i) tokens.push_back(letter(prompt_random));
  std::vector<int32_t> generated;
  generated.reserve(length);
  std::span<const int32_t> step_tokens = tokens;
  for (int t = 0; t < length; ++t) {
    EXPECT_TRUE(kv.Reserve(*pool, static_cast<int32_t>(step_tokens.size())).ok());
    engine::StepLogits logits;
    const engine::SequenceStep step{&kv, step_tokens};
    EXPECT_TRUE(model.Forward({&step, 1}, *pool, logits).ok());
    const std::span<const float> row = logits.row(0);
    generated.push_back(
        static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin()));
    step_tokens = {&generated.back(), 1};
  }
  kv.Release(*pool);
  return generated;
}

TEST_F(CudaBackendTest, GreedyGenerationMatchesTheCpu) {
  const auto dir = engine::testing::BundledModelDir();
  auto cpu_model = engine::Model::Load(dir, *cpu_);
  auto cuda_model = engine::Model::Load(dir, *cuda_);
  ASSERT_TRUE(cpu_model.ok() && cuda_model.ok());
  EXPECT_EQ(Generate(**cuda_model, seed_), Generate(**cpu_model, seed_)) << "seed " << seed_;
}

// Near-identical: the first 32 tokens the same as the CPU's; 16-bit rounding may tip a close
// argmax after that.
void CudaBackendTest::ExpectHalfGenerationCloseToTheCpu(DType dtype) {
  auto half = CreateBackend("cuda", {.weight_dtype = dtype});
  ASSERT_TRUE(half.ok()) << half.status();
  const auto dir = engine::testing::BundledModelDir();
  auto cpu_model = engine::Model::Load(dir, *cpu_);
  auto half_model = engine::Model::Load(dir, **half);
  ASSERT_TRUE(cpu_model.ok() && half_model.ok());
  constexpr size_t kSame = 32;
  const std::vector<int32_t> expected = Generate(**cpu_model, seed_, 48);
  const std::vector<int32_t> actual = Generate(**half_model, seed_, 48);
  size_t same = 0;
  while (same < expected.size() && actual[same] == expected[same]) ++same;
  EXPECT_GE(same, kSame) << DTypeName(dtype) << " seed " << seed_;
}

TEST_F(CudaBackendTest, GreedyGenerationInBf16StaysCloseToTheCpu) {
  ExpectHalfGenerationCloseToTheCpu(DType::kBF16);
}

TEST_F(CudaBackendTest, GreedyGenerationInF16StaysCloseToTheCpu) {
  ExpectHalfGenerationCloseToTheCpu(DType::kF16);
}

}  // namespace
}  // namespace kvd::kernels
