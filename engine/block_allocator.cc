#include "engine/block_allocator.h"

#include <algorithm>
#include <bit>

#include "base/check.h"

namespace kvd::engine {

int32_t BlockAllocator::RunBlocks(int32_t block_size) {
  KVD_CHECK(block_size > 0);
  const int32_t blocks = std::clamp(kRunEntries / block_size, 1, 64);
  return static_cast<int32_t>(std::bit_floor(static_cast<uint32_t>(blocks)));
}

BlockAllocator::BlockAllocator(int32_t num_blocks, int32_t run_blocks)
    : num_blocks_(num_blocks), run_blocks_(run_blocks), num_free_(num_blocks) {
  KVD_CHECK(num_blocks > 0);
  KVD_CHECK(run_blocks >= 1 && run_blocks <= 64 &&
            std::has_single_bit(static_cast<uint32_t>(run_blocks)));
  // Every block free, and no bit past the last block or the last word.
  free_bits_.assign((static_cast<size_t>(num_blocks) + 63) / 64, ~uint64_t{0});
  if (num_blocks % 64 != 0) free_bits_.back() = (uint64_t{1} << (num_blocks % 64)) - 1;
  free_words_.assign((free_bits_.size() + 63) / 64, ~uint64_t{0});
  if (free_bits_.size() % 64 != 0) {
    free_words_.back() = (uint64_t{1} << (free_bits_.size() % 64)) - 1;
  }
  const auto runs = static_cast<int32_t>((int64_t{num_blocks} + run_blocks - 1) / run_blocks);
  free_runs_.reserve(static_cast<size_t>(runs));
  for (int32_t run = runs - 1; run >= 0; --run) free_runs_.push_back(run);
}

bool BlockAllocator::is_free(int32_t block) const {
  KVD_CHECK(block >= 0 && block < num_blocks_);
  return (free_bits_[block / 64] >> (block % 64)) & 1;
}

uint64_t BlockAllocator::RunMask(int32_t run) const {
  const int32_t first = run * run_blocks_;
  const int32_t blocks = std::min(run_blocks_, num_blocks_ - first);
  const uint64_t ones = blocks == 64 ? ~uint64_t{0} : (uint64_t{1} << blocks) - 1;
  return ones << (first % 64);
}

bool BlockAllocator::RunIsFree(int32_t run) const {
  const uint64_t mask = RunMask(run);
  return (free_bits_[static_cast<size_t>(run) * run_blocks_ / 64] & mask) == mask;
}

void BlockAllocator::MarkTaken(int32_t block) {
  KVD_CHECK(is_free(block));
  uint64_t& word = free_bits_[block / 64];
  word &= ~(uint64_t{1} << (block % 64));
  if (word == 0) {
    const size_t w = block / 64;
    free_words_[w / 64] &= ~(uint64_t{1} << (w % 64));
  }
  --num_free_;
}

int32_t BlockAllocator::LowestFree() const {
  for (size_t s = 0; s < free_words_.size(); ++s) {
    if (free_words_[s] == 0) continue;
    const size_t w = s * 64 + std::countr_zero(free_words_[s]);
    return static_cast<int32_t>(w * 64 + std::countr_zero(free_bits_[w]));
  }
  return kNoBlock;
}

int32_t BlockAllocator::Take(int32_t after) {
  if (num_free_ == 0) return kNoBlock;
  int32_t block = kNoBlock;
  if (after != kNoBlock) {
    KVD_CHECK(!is_free(after));
    const int32_t next = after + 1;
    if (next % run_blocks_ != 0 && next < num_blocks_ && is_free(next)) block = next;
  }
  if (block == kNoBlock && !free_runs_.empty()) {
    KVD_CHECK(RunIsFree(free_runs_.back()));
    block = free_runs_.back() * run_blocks_;
    free_runs_.pop_back();
  }
  // No run is wholly free, so the lowest free block lies in a run someone holds.
  if (block == kNoBlock) block = LowestFree();
  MarkTaken(block);
  return block;
}

void BlockAllocator::Give(int32_t block) {
  KVD_CHECK(!is_free(block));
  const size_t w = block / 64;
  free_bits_[w] |= uint64_t{1} << (block % 64);
  free_words_[w / 64] |= uint64_t{1} << (w % 64);
  ++num_free_;
  const int32_t run = block / run_blocks_;
  if (RunIsFree(run)) free_runs_.push_back(run);
}

}  // namespace kvd::engine
