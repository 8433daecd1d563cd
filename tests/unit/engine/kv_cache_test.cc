#include "engine/kv_cache.h"

#include <gtest/gtest.h>

#include <set>

#include "tests/support/failing_kv_moves_backend.h"

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

// Two sequences decoding side by side: each (layer, kv head) still gets runs of adjacent blocks,
// so that the CPU's attention streams a run as one.
TEST_F(KvCacheTest, HeadsGrowingTogetherKeepTheirBlocksInRuns) {
  constexpr int32_t kBlockSize = 16;
  const int32_t run = BlockAllocator::RunBlocks(kBlockSize);
  ASSERT_GT(run, 1);
  auto pool =
      KvBlockPool::Create(*backend_, {.num_blocks = 256, .block_size = kBlockSize, .head_dim = 8});
  ASSERT_TRUE(pool.ok());
  SequenceKv first(2, 2), second(2, 2);
  for (int32_t token = 0; token < 2 * run * kBlockSize; ++token) {
    for (SequenceKv* sequence : {&first, &second}) {
      ASSERT_TRUE(sequence->Reserve(**pool, 1).ok());
      sequence->Advance(1);
    }
  }
  for (const SequenceKv* sequence : {&first, &second}) {
    for (int32_t layer = 0; layer < 2; ++layer) {
      for (int32_t head = 0; head < 2; ++head) {
        const std::vector<int32_t>& blocks = sequence->blocks(layer, head);
        ASSERT_EQ(std::ssize(blocks), 2 * run);
        for (size_t b = 0; b < blocks.size(); ++b) {
          if (b % run != 0)
            EXPECT_EQ(blocks[b], blocks[b - 1] + 1) << "block " << b;
          else
            EXPECT_EQ(blocks[b] % run, 0) << "block " << b;
        }
      }
    }
  }
  first.Release(**pool);
  second.Release(**pool);
  EXPECT_EQ((*pool)->num_free_blocks(), 256);
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
  const int32_t block = (*pool)->Allocate(BlockAllocator::kNoBlock);
  (*pool)->AddRef(block);
  (*pool)->Release(block);
  EXPECT_EQ((*pool)->num_free_blocks(), 1);
  (*pool)->Release(block);
  EXPECT_EQ((*pool)->num_free_blocks(), 2);
  EXPECT_GE((*pool)->Allocate(BlockAllocator::kNoBlock), 0);
  EXPECT_GE((*pool)->Allocate(BlockAllocator::kNoBlock), 0);
  EXPECT_EQ((*pool)->Allocate(BlockAllocator::kNoBlock), -1);
}

// Fills entries [from, to) of (layer 0, head 0) with keys, values and log-votes derived from
// their index, as AppendKv would.
void WriteEntries(const KvBlockPool& pool, const SequenceKv& sequence, int32_t from, int32_t to) {
  const kernels::KvPool& storage = pool.storage();
  for (int32_t entry = from; entry < to; ++entry) {
    const int32_t block = sequence.blocks(0, 0)[entry / storage.block_size];
    const size_t slot =
        static_cast<size_t>(block) * storage.block_size + entry % storage.block_size;
    for (int32_t d = 0; d < storage.head_dim; ++d) {
      static_cast<float*>(storage.keys)[slot * storage.head_dim + d] =
          static_cast<float>(entry * 100 + d);
      static_cast<float*>(storage.values)[slot * storage.head_dim + d] =
          static_cast<float>(-entry * 100 - d);
    }
    storage.log_votes[slot] = 0.5f * static_cast<float>(entry);
  }
}

float KeyAt(const KvBlockPool& pool, const SequenceKv& sequence, int32_t entry, int32_t d) {
  const kernels::KvPool& storage = pool.storage();
  const int32_t block = sequence.blocks(0, 0)[entry / storage.block_size];
  const size_t slot = static_cast<size_t>(block) * storage.block_size + entry % storage.block_size;
  return static_cast<const float*>(storage.keys)[slot * storage.head_dim + d];
}

TEST_F(KvCacheTest, SharedPrefixCopiesOnlyThePartialLastBlockOnWrite) {
  auto pool = KvBlockPool::Create(*backend_, {.num_blocks = 8, .block_size = 4, .head_dim = 2});
  ASSERT_TRUE(pool.ok());
  SequenceKv parent(1, 1);
  ASSERT_TRUE(parent.Reserve(**pool, 6).ok());  // one full block and one with 2 of 4 entries
  WriteEntries(**pool, parent, 0, 6);
  parent.Advance(6);

  SequenceKv child(1, 1);
  child.ShareFrom(parent, **pool);
  EXPECT_EQ(child.blocks(0, 0), parent.blocks(0, 0));
  EXPECT_EQ(child.length(0, 0), 6);
  EXPECT_EQ(child.next_position(), 6);
  EXPECT_EQ((*pool)->num_free_blocks(), 6);  // nothing copied yet
  EXPECT_EQ(child.BlocksToReserve(**pool, 1), 1);

  ASSERT_TRUE(child.Reserve(**pool, 1).ok());
  EXPECT_EQ((*pool)->num_free_blocks(), 5);
  EXPECT_EQ(child.blocks(0, 0)[0], parent.blocks(0, 0)[0]);  // the full block stays shared
  EXPECT_NE(child.blocks(0, 0)[1], parent.blocks(0, 0)[1]);  // the partial one is copied
  for (int32_t entry = 0; entry < 6; ++entry) {
    EXPECT_EQ(KeyAt(**pool, child, entry, 1), KeyAt(**pool, parent, entry, 1)) << entry;
  }
  const kernels::KvPool& storage = (*pool)->storage();
  EXPECT_EQ(storage.log_votes[child.blocks(0, 0)[1] * 4 + 1], 2.5f);

  // Writing the child's new entry leaves the parent's cache as it was.
  WriteEntries(**pool, child, 6, 7);
  child.Advance(1);
  EXPECT_EQ(KeyAt(**pool, child, 6, 0), 600.0f);
  // The parent's partial block now has a single owner again: no copy on its next append.
  EXPECT_EQ(parent.BlocksToReserve(**pool, 2), 0);

  child.Release(**pool);
  parent.Release(**pool);
  EXPECT_EQ((*pool)->num_free_blocks(), 8);
}

// Writes key value i (every dimension) into entry i of (layer, kv head) of `kv`.
void NumberEntries(KvBlockPool& pool, SequenceKv& kv, int32_t layer, int32_t head, int32_t count,
                   float offset) {
  const int32_t dim = pool.storage().head_dim;
  std::vector<kernels::KvSlot> slots;
  std::vector<float> keys, values, votes;
  for (int32_t i = 0; i < count; ++i) {
    slots.push_back(kv.slot(layer, head, i, pool.block_size()));
    keys.insert(keys.end(), dim, offset + i);
    values.insert(values.end(), dim, -(offset + i));
    votes.push_back(0.5f * i);
  }
  EXPECT_TRUE(pool.backend()
                  .WriteKvSlots(pool.storage(), slots, keys.data(), values.data(), votes.data())
                  .ok());
}

// The key numbers of (layer, kv head)'s entries, in index order.
std::vector<float> EntryNumbers(KvBlockPool& pool, const SequenceKv& kv, int32_t layer,
                                int32_t head) {
  const int32_t dim = pool.storage().head_dim;
  const int32_t count = kv.length(layer, head);
  std::vector<kernels::KvSlot> slots;
  for (int32_t i = 0; i < count; ++i) slots.push_back(kv.slot(layer, head, i, pool.block_size()));
  std::vector<float> keys(static_cast<size_t>(count) * dim), values(keys.size()), votes(count);
  EXPECT_TRUE(pool.backend()
                  .ReadKvSlots(pool.storage(), slots, keys.data(), values.data(), votes.data())
                  .ok());
  std::vector<float> numbers;
  for (int32_t i = 0; i < count; ++i) {
    numbers.push_back(keys[static_cast<size_t>(i) * dim]);
    EXPECT_EQ(values[static_cast<size_t>(i) * dim], -keys[static_cast<size_t>(i) * dim]);
  }
  return numbers;
}

TEST_F(KvCacheTest, RemovedEntriesAreFilledFromTheEndAndEmptyBlocksReturn) {
  auto pool = KvBlockPool::Create(*backend_, {.num_blocks = 16, .block_size = 4, .head_dim = 2});
  ASSERT_TRUE(pool.ok());
  SequenceKv kv(1, 2);
  ASSERT_TRUE(kv.Reserve(**pool, 10).ok());
  kv.Advance(10);
  NumberEntries(**pool, kv, 0, 0, 10, 0.0f);
  NumberEntries(**pool, kv, 0, 1, 10, 100.0f);
  const int32_t free_before = (*pool)->num_free_blocks();
  const std::vector<int32_t> removed = {8, 1, 3, 5};
  auto moves = kv.RemoveEntries(**pool, 0, 0, removed);
  ASSERT_TRUE(moves.ok()) << moves.status();
  EXPECT_EQ(kv.length(0, 0), 6);
  EXPECT_EQ(kv.length(0, 1), 10) << "other heads keep their entries";
  EXPECT_EQ(kv.next_position(), 10);
  // Holes 1, 3, 5 take entries 6, 7, 9 (8 is removed itself).
  ASSERT_EQ(moves->size(), 3u);
  EXPECT_EQ((*moves)[0].from, 6);
  EXPECT_EQ((*moves)[0].to, 1);
  EXPECT_EQ((*moves)[2].from, 9);
  EXPECT_EQ((*moves)[2].to, 5);
  EXPECT_EQ(EntryNumbers(**pool, kv, 0, 0), (std::vector<float>{0, 6, 2, 7, 4, 9}));
  EXPECT_EQ(EntryNumbers(**pool, kv, 0, 1).back(), 109.0f);
  EXPECT_EQ((*pool)->num_free_blocks(), free_before + 1) << "3 blocks became 2";
  // Removing what is left empties the head and frees its blocks.
  std::vector<int32_t> all(6);
  for (int32_t i = 0; i < 6; ++i) all[i] = i;
  ASSERT_TRUE(kv.RemoveEntries(**pool, 0, 0, all).ok());
  EXPECT_EQ(kv.length(0, 0), 0);
  EXPECT_TRUE(kv.blocks(0, 0).empty());
  EXPECT_EQ(kv.RemoveEntries(**pool, 0, 1, std::vector<int32_t>{10}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(kv.RemoveEntries(**pool, 0, 1, std::vector<int32_t>{2, 2}).status().code(),
            absl::StatusCode::kInvalidArgument);
  kv.Release(**pool);
  EXPECT_EQ((*pool)->num_free_blocks(), 16);
}

// Rejected draft tokens: a step's last entries go, in every head, and so do the blocks they
// alone filled; what stays is what was there, and the next step appends after it.
TEST_F(KvCacheTest, DroppingTheLastEntriesRollsEveryHeadBack) {
  auto pool = KvBlockPool::Create(*backend_, {.num_blocks = 16, .block_size = 4, .head_dim = 2});
  ASSERT_TRUE(pool.ok());
  SequenceKv kv(1, 2);
  ASSERT_TRUE(kv.Reserve(**pool, 3).ok());
  kv.Advance(3);
  const int32_t free_after_three = (*pool)->num_free_blocks();
  ASSERT_TRUE(kv.Reserve(**pool, 6).ok());  // a token and five drafts: 9 entries, 3 blocks
  kv.Advance(6);
  NumberEntries(**pool, kv, 0, 0, 9, 0.0f);
  ASSERT_TRUE(kv.DropLast(**pool, 4).ok());  // one draft accepted
  EXPECT_EQ(kv.length(0, 0), 5);
  EXPECT_EQ(kv.length(0, 1), 5);
  EXPECT_EQ(kv.next_position(), 5);
  EXPECT_EQ((*pool)->num_free_blocks(), free_after_three - 2) << "2 blocks a head, not 3";
  EXPECT_EQ(EntryNumbers(**pool, kv, 0, 0), (std::vector<float>{0, 1, 2, 3, 4}));
  ASSERT_TRUE(kv.DropLast(**pool, 0).ok());
  EXPECT_EQ(kv.length(0, 0), 5);
  EXPECT_EQ(kv.DropLast(**pool, 6).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(kv.DropLast(**pool, -1).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(kv.length(0, 1), 5) << "a refused drop changes nothing";
  kv.Release(**pool);
  EXPECT_EQ((*pool)->num_free_blocks(), 16);
}

TEST_F(KvCacheTest, EntriesOfASharedBlockAreNeverDropped) {
  auto pool = KvBlockPool::Create(*backend_, {.num_blocks = 8, .block_size = 4, .head_dim = 2});
  ASSERT_TRUE(pool.ok());
  SequenceKv prefix(1, 1);
  ASSERT_TRUE(prefix.Reserve(**pool, 4).ok());
  prefix.Advance(4);
  SequenceKv question(1, 1);
  question.ShareFrom(prefix, **pool);
  ASSERT_TRUE(question.Reserve(**pool, 2).ok());
  question.Advance(2);
  EXPECT_EQ(question.DropLast(**pool, 3).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(question.length(0, 0), 6);
  ASSERT_TRUE(question.DropLast(**pool, 2).ok());
  EXPECT_EQ(question.blocks(0, 0).size(), 1u);
  EXPECT_EQ(prefix.length(0, 0), 4);
  question.Release(**pool);
  prefix.Release(**pool);
  EXPECT_EQ((*pool)->num_free_blocks(), 8);
}

TEST_F(KvCacheTest, SharedEntriesAreNeverEditedInPlace) {
  auto pool = KvBlockPool::Create(*backend_, {.num_blocks = 8, .block_size = 4, .head_dim = 2});
  ASSERT_TRUE(pool.ok());
  SequenceKv prefix(1, 1);
  ASSERT_TRUE(prefix.Reserve(**pool, 6).ok());
  prefix.Advance(6);
  NumberEntries(**pool, prefix, 0, 0, 6, 0.0f);
  SequenceKv question(1, 1);
  question.ShareFrom(prefix, **pool);
  ASSERT_TRUE(question.Reserve(**pool, 4).ok());  // copies the partial block, adds one
  question.Advance(4);
  // Entry 1 lies in the shared first block: refused, nothing changed.
  const absl::Status refused =
      question.RemoveEntries(**pool, 0, 0, std::vector<int32_t>{1}).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_EQ(question.length(0, 0), 10);
  // The private tail may change: entry 5 (in the copied block) takes entry 9.
  auto moves = question.RemoveEntries(**pool, 0, 0, std::vector<int32_t>{5});
  ASSERT_TRUE(moves.ok()) << moves.status();
  EXPECT_EQ(question.length(0, 0), 9);
  EXPECT_EQ(EntryNumbers(**pool, prefix, 0, 0), (std::vector<float>{0, 1, 2, 3, 4, 5}))
      << "the shared prefix is untouched";
  question.Release(**pool);
  prefix.Release(**pool);
  EXPECT_EQ((*pool)->num_free_blocks(), 8);
}

TEST_F(KvCacheTest, BlocksInBytesAndUsage) {
  EXPECT_EQ(
      KvBlockPool::BlocksInBytes(10 * KvBlockPool::BlockBytes(16, 64, kernels::DType::kF32) + 5, 16,
                                 64, kernels::DType::kF32),
      10);
  // A bf16 block holds its keys and values in half the bytes; log-votes stay f32.
  EXPECT_EQ(KvBlockPool::BlockBytes(16, 64, kernels::DType::kBF16), 16u * (2 * 64 * 2 + 4));
  EXPECT_EQ(KvBlockPool::BlocksInBytes(KvBlockPool::BlockBytes(16, 64, kernels::DType::kF32), 16,
                                       64, kernels::DType::kBF16),
            1);
  EXPECT_EQ(KvBlockPool::BlocksInBytes(2 * KvBlockPool::BlockBytes(16, 64, kernels::DType::kBF16),
                                       16, 64, kernels::DType::kBF16),
            2);
  auto pool = KvBlockPool::Create(*backend_, {.num_blocks = 4, .block_size = 4, .head_dim = 2});
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ((*pool)->usage(), 0.0);
  (*pool)->Allocate(BlockAllocator::kNoBlock);
  EXPECT_EQ((*pool)->num_used_blocks(), 1);
  EXPECT_EQ((*pool)->usage(), 0.25);
}

TEST_F(KvCacheTest, InvalidPoolOptions) {
  EXPECT_EQ(KvBlockPool::Create(*backend_, {.num_blocks = 0, .block_size = 4, .head_dim = 8})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// A backend's failed KV move is the error of the call that moved, and leaves the cache and the
// pool as they were.
TEST(KvCacheMovesTest, AFailedCopyOnWriteIsReservesErrorAndLeaksNoBlock) {
  test_support::FailingKvMovesBackend backend(*kernels::CreateBackend("cpu", {.num_threads = 1}),
                                              absl::InternalError("device lost the copy"));
  auto pool = KvBlockPool::Create(backend, {.num_blocks = 8, .block_size = 4, .head_dim = 2});
  ASSERT_TRUE(pool.ok());
  SequenceKv parent(1, 1);
  ASSERT_TRUE(parent.Reserve(**pool, 6).ok());
  parent.Advance(6);
  SequenceKv child(1, 1);
  child.ShareFrom(parent, **pool);
  const std::vector<int32_t> shared_blocks = child.blocks(0, 0);
  const int32_t free_before = (*pool)->num_free_blocks();

  backend.set_failing(true);
  EXPECT_EQ(child.Reserve(**pool, 1), absl::InternalError("device lost the copy"));
  EXPECT_EQ((*pool)->num_free_blocks(), free_before);
  EXPECT_EQ(child.blocks(0, 0), shared_blocks) << "still sharing, nothing half-copied";

  backend.set_failing(false);
  ASSERT_TRUE(child.Reserve(**pool, 1).ok());
  child.Release(**pool);
  parent.Release(**pool);
  EXPECT_EQ((*pool)->num_free_blocks(), 8);
}

TEST(KvCacheMovesTest, AFailedMoveIsRemoveEntriesErrorAndKeepsTheLength) {
  test_support::FailingKvMovesBackend backend(*kernels::CreateBackend("cpu", {.num_threads = 1}),
                                              absl::InternalError("device lost the copy"));
  auto pool = KvBlockPool::Create(backend, {.num_blocks = 8, .block_size = 4, .head_dim = 2});
  ASSERT_TRUE(pool.ok());
  SequenceKv kv(1, 1);
  ASSERT_TRUE(kv.Reserve(**pool, 10).ok());
  kv.Advance(10);
  backend.set_failing(true);
  EXPECT_EQ(kv.RemoveEntries(**pool, 0, 0, std::vector<int32_t>{1, 3}).status(),
            absl::InternalError("device lost the copy"));
  EXPECT_EQ(kv.length(0, 0), 10);
  EXPECT_EQ(kv.blocks(0, 0).size(), 3u);
  kv.Release(**pool);
  EXPECT_EQ((*pool)->num_free_blocks(), 8);
}

}  // namespace
}  // namespace kvd::engine
