#include "engine/kv_cache.h"

#include <gtest/gtest.h>

#include <set>

namespace kvd::engine {
namespace {

class KvCacheTest : public ::testing::Test {
 protected:
  std::unique_ptr<kernels::Backend> backend_ = *kernels::CreateBackend("cpu", {.num_threads = 1});
};

TEST_F(KvCacheTest, ReserveTakesBlocksPerLayerAndHead) {
  auto pool = KvBlockPool::Create(*backend_, {.num_blocks = 20, .block_size = 4, .head_dim = 8});
  ASSERT_TRUE(pool.ok());
  SequenceKv sequence(/*num_layers=*/2, /*num_kv_heads=*/2);
  ASSERT_TRUE(sequence.Reserve(**pool, 5).ok());  // 2 blocks for each of 4 (layer, head)s
  EXPECT_EQ((*pool)->num_free_blocks(), 12);
  sequence.Advance(5);
  EXPECT_EQ(sequence.length(1, 1), 5);
  EXPECT_EQ(sequence.next_position(), 5);
  ASSERT_TRUE(sequence.Reserve(**pool, 3).ok());  // 8 entries still fit in 2 blocks
  EXPECT_EQ((*pool)->num_free_blocks(), 12);
  ASSERT_TRUE(sequence.Reserve(**pool, 4).ok());
  EXPECT_EQ((*pool)->num_free_blocks(), 8);
  std::set<int32_t> distinct;
  for (int l = 0; l < 2; ++l) {
    for (int h = 0; h < 2; ++h)
      distinct.insert(sequence.blocks(l, h).begin(), sequence.blocks(l, h).end());
  }
  EXPECT_EQ(distinct.size(), 12u);
  sequence.Release(**pool);
  EXPECT_EQ((*pool)->num_free_blocks(), 20);
  EXPECT_EQ(sequence.length(0, 0), 0);
}

TEST_F(KvCacheTest, ExhaustionIsAnErrorAndReleaseReturnsEverything) {
  auto pool = KvBlockPool::Create(*backend_, {.num_blocks = 3, .block_size = 4, .head_dim = 8});
  ASSERT_TRUE(pool.ok());
  SequenceKv sequence(1, 2);
  const absl::Status status = sequence.Reserve(**pool, 8);  // needs 4 blocks
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  sequence.Release(**pool);
  EXPECT_EQ((*pool)->num_free_blocks(), 3);
}

TEST_F(KvCacheTest, SharedBlocksReturnAfterLastReference) {
  auto pool = KvBlockPool::Create(*backend_, {.num_blocks = 2, .block_size = 4, .head_dim = 8});
  ASSERT_TRUE(pool.ok());
  const int32_t block = (*pool)->Allocate();
  (*pool)->AddRef(block);
  (*pool)->Release(block);
  EXPECT_EQ((*pool)->num_free_blocks(), 1);
  (*pool)->Release(block);
  EXPECT_EQ((*pool)->num_free_blocks(), 2);
  EXPECT_GE((*pool)->Allocate(), 0);
  EXPECT_GE((*pool)->Allocate(), 0);
  EXPECT_EQ((*pool)->Allocate(), -1);
}

TEST_F(KvCacheTest, InvalidPoolOptions) {
  EXPECT_EQ(KvBlockPool::Create(*backend_, {.num_blocks = 0, .block_size = 4, .head_dim = 8})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvd::engine
