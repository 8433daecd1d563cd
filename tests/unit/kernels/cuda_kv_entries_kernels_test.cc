// The CUDA backend's KV entry kernels (kernels/cuda/kv_entries_kernels.cuh) run on the CPU
// through the CUDA emulation, against the CPU backend's AppendKv and Copy/Read/WriteKvSlots:
// random pools with shuffled block tables, head sizes below, at and above a warp's lanes, and
// more entries than one block's warps take. Pools and outputs must match bit for bit. Needs no
// device.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/kv_layout.h"
#include "tests/support/kernel_test_values.h"
#include "tests/unit/kernels/cuda_emulation/kv_entries_launches.h"

namespace kvd::kernels::cuda {
namespace {

constexpr int32_t kBlocks = 24;
constexpr int32_t kBlockSize = 16;
constexpr int64_t kSlots = int64_t{kBlocks} * kBlockSize;

// A pool's storage, which copies whole.
struct PoolData {
  std::vector<float> keys, values, log_votes;
  int32_t head_dim;

  KvPool View() {
    return KvPool{keys.data(), values.data(), log_votes.data(), kBlocks, kBlockSize, head_dim};
  }
};

void ExpectSameBits(const std::vector<float>& actual, const std::vector<float>& expected,
                    const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(actual[i]), std::bit_cast<uint32_t>(expected[i]))
        << what << " at " << i;
  }
}

void ExpectSamePools(const PoolData& actual, const PoolData& expected, const std::string& trace) {
  ExpectSameBits(actual.keys, expected.keys, "keys, " + trace);
  ExpectSameBits(actual.values, expected.values, "values, " + trace);
  ExpectSameBits(actual.log_votes, expected.log_votes, "log-votes, " + trace);
}

class CudaKvEntriesKernelsTest : public ::testing::TestWithParam<int32_t> {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    random_.seed(seed_);
    head_dim_ = GetParam();
  }

  std::vector<float> Random(size_t n) { return RandomNormals(random_, n); }

  PoolData RandomPool() {
    const size_t floats = static_cast<size_t>(kSlots) * head_dim_;
    return PoolData{Random(floats), Random(floats), Random(kSlots), head_dim_};
  }

  // `count` distinct slots of the pool, in random order, and as many more distinct from those.
  std::pair<std::vector<KvSlot>, std::vector<KvSlot>> DisjointSlots(size_t count) {
    std::vector<KvSlot> all(kSlots);
    for (KvSlot s = 0; s < kSlots; ++s) all[s] = s;
    std::shuffle(all.begin(), all.end(), random_);
    return {std::vector<KvSlot>(all.begin(), all.begin() + count),
            std::vector<KvSlot>(all.begin() + count, all.begin() + 2 * count)};
  }

  std::string Trace() const {
    return "head_dim " + std::to_string(head_dim_) + ", seed " + std::to_string(seed_);
  }

  uint32_t seed_ = 0;
  std::mt19937 random_;
  int32_t head_dim_ = 0;
  cpu::CpuBackend cpu_{BackendOptions{.num_threads = 1}};
};

TEST_P(CudaKvEntriesKernelsTest, AppendKvMatchesTheCpu) {
  constexpr int32_t kKvHeads = 2;
  // Rows and cached lengths per sequence (the same for both heads but the second's, which is
  // shorter by 5 where it can be).
  struct SequenceSpec {
    int32_t rows, cached;
  };
  const SequenceSpec specs[] = {{1, 0}, {30, 17}, {1, 70}, {12, 3}};
  // Blocks handed out in a shuffled order, so that tables jump around the pool.
  std::vector<int32_t> order(kBlocks);
  for (int32_t b = 0; b < kBlocks; ++b) order[b] = b;
  std::shuffle(order.begin(), order.end(), random_);
  int32_t next_block = 0, total_rows = 0;
  std::vector<std::vector<std::vector<int32_t>>> tables(std::size(specs));
  std::vector<std::vector<int32_t>> lengths(std::size(specs));
  std::vector<std::vector<const int32_t*>> table_ptrs(std::size(specs));
  std::vector<SequenceKvRef> sequences;
  for (size_t s = 0; s < std::size(specs); ++s) {
    for (int32_t h = 0; h < kKvHeads; ++h) {
      const int32_t cached = h == 1 ? std::max(0, specs[s].cached - 5) : specs[s].cached;
      std::vector<int32_t> table;
      for (int32_t b = 0; b < (cached + specs[s].rows + kBlockSize - 1) / kBlockSize; ++b) {
        ASSERT_LT(next_block, kBlocks);
        table.push_back(order[next_block++]);
      }
      tables[s].push_back(std::move(table));
      lengths[s].push_back(cached);
    }
    for (const auto& table : tables[s]) table_ptrs[s].push_back(table.data());
    sequences.push_back(SequenceKvRef{total_rows, specs[s].rows, table_ptrs[s], lengths[s]});
    total_rows += specs[s].rows;
  }
  // The step's k and v have a third head past the pool's, which no entry reads.
  const int64_t cols = int64_t{kKvHeads + 1} * head_dim_;
  std::vector<float> k = Random(static_cast<size_t>(total_rows * cols));
  std::vector<float> v = Random(k.size());
  PoolData expected = RandomPool(), actual = expected;
  cpu_.AppendKv(Tensor{k.data(), DType::kF32, total_rows, cols},
                Tensor{v.data(), DType::kF32, total_rows, cols}, expected.View(), sequences);
  // The entries' rows, heads and slots, as CudaBackend::AppendKv lists them.
  std::vector<int32_t> rows, heads;
  std::vector<int64_t> slots;
  for (const SequenceKvRef& seq : sequences) {
    for (int32_t h = 0; h < kKvHeads; ++h) {
      for (int32_t i = 0; i < seq.num_rows; ++i) {
        const int32_t entry = seq.cached_lengths[h] + i;
        rows.push_back(seq.first_row + i);
        heads.push_back(h);
        slots.push_back(KvSlot{seq.block_tables[h][entry / kBlockSize]} * kBlockSize +
                        entry % kBlockSize);
      }
    }
  }
  ASSERT_TRUE(emulation::EmulateAppendKv(k.data(), v.data(), cols, rows.data(), heads.data(),
                                         slots.data(), static_cast<int64_t>(slots.size()),
                                         actual.View())
                  .ok());
  ExpectSamePools(actual, expected, Trace());
}

TEST_P(CudaKvEntriesKernelsTest, CopyKvSlotsMatchesTheCpu) {
  const auto [src, dst] = DisjointSlots(100);
  PoolData expected = RandomPool(), actual = expected;
  ASSERT_TRUE(cpu_.CopyKvSlots(expected.View(), src, dst).ok());
  ASSERT_TRUE(emulation::EmulateCopyKvSlots(src.data(), dst.data(),
                                            static_cast<int64_t>(src.size()), actual.View())
                  .ok());
  ExpectSamePools(actual, expected, Trace());
}

TEST_P(CudaKvEntriesKernelsTest, GatherKvSlotsMatchesReadKvSlots) {
  const std::vector<KvSlot> slots = DisjointSlots(100).first;
  PoolData pool = RandomPool();
  const size_t floats = slots.size() * head_dim_;
  std::vector<float> expected_keys(floats), expected_values(floats), expected_votes(slots.size());
  ASSERT_TRUE(cpu_.ReadKvSlots(pool.View(), slots, expected_keys.data(), expected_values.data(),
                               expected_votes.data())
                  .ok());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> keys(floats, nan), values(floats, nan), votes(slots.size(), nan);
  ASSERT_TRUE(emulation::EmulateGatherKvSlots(slots.data(), static_cast<int64_t>(slots.size()),
                                              pool.View(), keys.data(), values.data(), votes.data())
                  .ok());
  ExpectSameBits(keys, expected_keys, "keys, " + Trace());
  ExpectSameBits(values, expected_values, "values, " + Trace());
  ExpectSameBits(votes, expected_votes, "log-votes, " + Trace());
}

TEST_P(CudaKvEntriesKernelsTest, ScatterKvSlotsMatchesWriteKvSlots) {
  const std::vector<KvSlot> slots = DisjointSlots(100).first;
  const size_t floats = slots.size() * head_dim_;
  const std::vector<float> keys = Random(floats), values = Random(floats),
                           votes = Random(slots.size());
  PoolData expected = RandomPool(), actual = expected;
  ASSERT_TRUE(
      cpu_.WriteKvSlots(expected.View(), slots, keys.data(), values.data(), votes.data()).ok());
  ASSERT_TRUE(emulation::EmulateScatterKvSlots(slots.data(), static_cast<int64_t>(slots.size()),
                                               keys.data(), values.data(), votes.data(),
                                               actual.View())
                  .ok());
  ExpectSamePools(actual, expected, Trace());
}

// Head sizes below a warp's lanes, of several warps' worth, and not a multiple of 32.
INSTANTIATE_TEST_SUITE_P(HeadDims, CudaKvEntriesKernelsTest, ::testing::Values(16, 64, 80, 128),
                         [](const ::testing::TestParamInfo<int32_t>& info) {
                           return "head_dim" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace kvd::kernels::cuda
