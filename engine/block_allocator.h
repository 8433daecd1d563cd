// Which blocks of the KV pool are free, and which one to hand out next. Blocks are grouped in
// aligned runs of adjacent blocks; a (layer, kv head) that grows asks for the block after its
// last one, and a table that starts opens a run no one holds, so a head's entries lie in runs the
// CPU's attention streams as one instead of in single blocks scattered over the pool.
#pragma once

#include <cstdint>
#include <vector>

namespace kvd::engine {

class BlockAllocator {
 public:
  static constexpr int32_t kNoBlock = -1;
  // Entries a run should hold at least: a decode row's attention over runs of this many
  // entries streams at nearly the speed of a contiguous cache.
  static constexpr int32_t kRunEntries = 128;

  // Blocks a run holds for blocks of `block_size` entries: a power of two in [1, 64].
  static int32_t RunBlocks(int32_t block_size);

  // A pool of `num_blocks` (> 0) blocks, all free, in runs of `run_blocks` (a power of two in
  // [1, 64]). Runs of one block hand out the most recently freed block first.
  BlockAllocator(int32_t num_blocks, int32_t run_blocks);

  int32_t num_free() const { return num_free_; }
  // Whether `block` (in [0, num_blocks)) is free.
  bool is_free(int32_t block) const;

  // Takes a free block, or returns kNoBlock when none is: the block after `after` (a taken
  // block, or kNoBlock) when that one is free and in the same run; else the first block of a run
  // wholly free; else the lowest free block.
  int32_t Take(int32_t after);
  // Gives a taken block back.
  void Give(int32_t block);

 private:
  // Blocks of run `run`: run_blocks_, or fewer for a last run the pool cuts short.
  uint64_t RunMask(int32_t run) const;
  bool RunIsFree(int32_t run) const;
  void MarkTaken(int32_t block);
  int32_t LowestFree() const;

  int32_t num_blocks_;
  int32_t run_blocks_;
  int32_t num_free_;
  std::vector<uint64_t> free_bits_;   // bit b % 64 of word b / 64: block b is free
  std::vector<uint64_t> free_words_;  // bit w % 64 of word w / 64: free_bits_[w] has a free block
  // Every run wholly free, each once, the next to open last.
  std::vector<int32_t> free_runs_;
};

}  // namespace kvd::engine
