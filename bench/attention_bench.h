// What one decode row's attention costs on the CPU backend, per layer: a query of Llama 3.2 1B's
// heads over contexts of several lengths, with f32 and bf16 keys and values, over copies of the
// cache far larger than the caches, their blocks laid out as a pool hands them out (BlockLayout),
// against the machine's read bandwidth measured in the same run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/memory_bandwidth.h"

namespace kvd::bench {

struct AttentionBenchOptions {
  std::vector<int32_t> entries = {1024, 4096, 16384};
  int32_t num_heads = 32;  // Llama 3.2 1B's
  int32_t num_kv_heads = 8;
  int32_t head_dim = 64;
  int32_t block_size = 16;
  int32_t threads = 0;      // 0: every core
  int64_t cache_mib = 512;  // per length and type: copies of one layer's cache, read in turn
  int32_t repeats = 5;      // timed passes over every copy; the median is kept
  uint64_t seed = 1;
};

// Where a (layer, kv head)'s blocks lie in the pool.
enum class BlockLayout {
  kInOrder,         // ascending: a prompt prefilled into a fresh pool
  kGrownSingly,     // every table growing a block at a time, together, a block from anywhere
  kGrownInRuns,     // the same, each table asking for the block after its last (BlockAllocator)
  kShuffledBlocks,  // blocks in a random order: a long-running pool handing out single blocks
  kShuffledRuns,    // runs of adjacent blocks in a random order: a long-running pool's runs
};
inline constexpr BlockLayout kBlockLayouts[] = {
    BlockLayout::kInOrder, BlockLayout::kGrownSingly, BlockLayout::kGrownInRuns,
    BlockLayout::kShuffledBlocks, BlockLayout::kShuffledRuns};
const char* BlockLayoutName(BlockLayout layout);

struct AttentionBenchRow {
  std::string kv_dtype;
  int32_t entries = 0;
  BlockLayout layout = BlockLayout::kInOrder;
  double ms = 0.0;               // one layer's attention for one row (median)
  double gb_per_second = 0.0;    // keys, values and log-votes read ÷ time
  double bandwidth_share = 0.0;  // of the measured read bandwidth
};

struct AttentionBenchResult {
  ReadBandwidth read;
  std::vector<AttentionBenchRow> rows;
};

[[nodiscard]] absl::StatusOr<AttentionBenchResult> MeasureAttention(
    const AttentionBenchOptions& options);

// Prints the result as a markdown table under a line saying what was measured.
void PrintAttentionTable(const AttentionBenchOptions& options, const AttentionBenchResult& result);

}  // namespace kvd::bench
