#include "engine/block_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

namespace kvd::engine {
namespace {

constexpr int32_t kNone = BlockAllocator::kNoBlock;

TEST(BlockAllocatorTest, RunsHoldAtLeastTheRunEntries) {
  EXPECT_EQ(BlockAllocator::RunBlocks(16), 8);
  EXPECT_EQ(BlockAllocator::RunBlocks(48), 2);  // 128 / 48 = 2.67: the power of two below
  EXPECT_EQ(BlockAllocator::RunBlocks(128), 1);
  EXPECT_EQ(BlockAllocator::RunBlocks(1024), 1);
  EXPECT_EQ(BlockAllocator::RunBlocks(1), 64);
}

TEST(BlockAllocatorTest, TablesGrowingTogetherEachGetRunsOfAdjacentBlocks) {
  BlockAllocator allocator(64, 4);
  std::vector<std::vector<int32_t>> tables(3);
  for (int round = 0; round < 8; ++round) {
    for (auto& table : tables) {
      table.push_back(allocator.Take(table.empty() ? kNone : table.back()));
    }
  }
  EXPECT_EQ(tables[0], (std::vector<int32_t>{0, 1, 2, 3, 12, 13, 14, 15}));
  EXPECT_EQ(tables[1], (std::vector<int32_t>{4, 5, 6, 7, 16, 17, 18, 19}));
  EXPECT_EQ(tables[2], (std::vector<int32_t>{8, 9, 10, 11, 20, 21, 22, 23}));
  EXPECT_EQ(allocator.num_free(), 64 - 24);
}

TEST(BlockAllocatorTest, RunsOfOneHandOutTheLastBlockGivenBackFirst) {
  BlockAllocator allocator(4, 1);
  EXPECT_EQ(allocator.Take(kNone), 0);
  EXPECT_EQ(allocator.Take(0), 1);
  EXPECT_EQ(allocator.Take(1), 2);
  allocator.Give(0);
  allocator.Give(2);
  EXPECT_EQ(allocator.Take(1), 2);
  EXPECT_EQ(allocator.Take(kNone), 0);
  EXPECT_EQ(allocator.Take(kNone), 3);
  EXPECT_EQ(allocator.Take(kNone), kNone);
}

TEST(BlockAllocatorTest, WithNoRunWhollyFreeTheLowestFreeBlockIsTaken) {
  BlockAllocator allocator(8, 4);
  EXPECT_EQ(allocator.Take(kNone), 0);
  EXPECT_EQ(allocator.Take(kNone), 4);
  // Run [0, 4) is held from block 0 and run [4, 8) from block 4: a new table takes the lowest
  // free block, and a table whose next block is taken goes there too.
  EXPECT_EQ(allocator.Take(kNone), 1);
  EXPECT_EQ(allocator.Take(0), 2);
  EXPECT_EQ(allocator.Take(2), 3);
  EXPECT_EQ(allocator.Take(3), 5);  // block 4 starts another run: not the one after 3
  allocator.Give(0);
  allocator.Give(1);
  allocator.Give(2);
  allocator.Give(3);
  // Run [0, 4) is wholly free again and opens before any lower block.
  EXPECT_EQ(allocator.Take(5), 6);
  EXPECT_EQ(allocator.Take(kNone), 0);
  EXPECT_EQ(allocator.Take(0), 1);
}

TEST(BlockAllocatorTest, ALastRunThePoolCutsShortIsStillARun) {
  BlockAllocator allocator(6, 4);
  EXPECT_EQ(allocator.Take(kNone), 0);
  EXPECT_EQ(allocator.Take(kNone), 4);
  EXPECT_EQ(allocator.Take(4), 5);
  EXPECT_EQ(allocator.Take(5), 1);  // block 6 is past the pool
  allocator.Give(4);
  allocator.Give(5);
  EXPECT_EQ(allocator.Take(kNone), 4);
}

// Any sequence of takes and gives hands out each block once, counts what is free, and runs out
// only when every block is taken.
TEST(BlockAllocatorTest, RandomTakesAndGivesKeepEveryBlockOnce) {
  for (const int32_t num_blocks : {1, 63, 64, 65, 200, 4100}) {
    for (const int32_t run_blocks : {1, 2, 8, 64}) {
      BlockAllocator allocator(num_blocks, run_blocks);
      std::mt19937 random(static_cast<uint32_t>(num_blocks * 100 + run_blocks));
      std::vector<std::vector<int32_t>> tables(5);
      std::set<int32_t> taken;
      for (int step = 0; step < 20000; ++step) {
        auto& table = tables[random() % tables.size()];
        if (random() % 3 == 0 && !table.empty()) {
          const size_t victim = random() % table.size();
          allocator.Give(table[victim]);
          taken.erase(table[victim]);
          table.erase(table.begin() + static_cast<std::ptrdiff_t>(victim));
        } else {
          const int32_t block = allocator.Take(table.empty() ? kNone : table.back());
          if (block == kNone) {
            ASSERT_EQ(static_cast<int32_t>(taken.size()), num_blocks);
            continue;
          }
          ASSERT_GE(block, 0);
          ASSERT_LT(block, num_blocks);
          ASSERT_TRUE(taken.insert(block).second) << "block " << block << " handed out twice";
          ASSERT_FALSE(allocator.is_free(block));
          table.push_back(block);
        }
        ASSERT_EQ(allocator.num_free(), num_blocks - static_cast<int32_t>(taken.size()));
      }
    }
  }
}

}  // namespace
}  // namespace kvd::engine
