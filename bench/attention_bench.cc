#include "bench/attention_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <random>
#include <thread>

#include "bench/memory_bandwidth.h"
#include "bench/statistics.h"
#include "bench/stopwatch.h"
#include "engine/block_allocator.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/host_memory.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/dtype.h"

namespace kvd::bench {
namespace {

using kernels::DType;
using kernels::cpu::ThreadPool;
// `count` values of `dtype` at `data`, uniform in [-1, 1) (a cheap generator: the caches are
// hundreds of MiB).
void FillRandom(void* data, DType dtype, int64_t count, std::mt19937& random) {
  uint32_t state = random();
  for (int64_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    const float x = static_cast<float>(static_cast<int32_t>(state)) * 0x1p-31f;
    if (dtype == DType::kF32) {
      static_cast<float*>(data)[i] = x;
    } else {
      static_cast<uint16_t*>(data)[i] = kernels::FloatToBF16(x);
    }
  }
}

// The blocks of `tables` tables of `blocks_per_table` blocks each, table after table, in a pool
// of exactly that many blocks laid out as `layout` says.
std::vector<int32_t> LayOutBlocks(BlockLayout layout, int64_t tables, int64_t blocks_per_table,
                                  int32_t block_size, std::mt19937& random) {
  const int64_t num_blocks = tables * blocks_per_table;
  std::vector<int32_t> blocks(static_cast<size_t>(num_blocks));
  const int32_t run_blocks = engine::BlockAllocator::RunBlocks(block_size);
  switch (layout) {
    case BlockLayout::kInOrder:
      std::iota(blocks.begin(), blocks.end(), 0);
      break;
    case BlockLayout::kGrownSingly:
    case BlockLayout::kGrownInRuns: {
      engine::BlockAllocator allocator(static_cast<int32_t>(num_blocks),
                                       layout == BlockLayout::kGrownInRuns ? run_blocks : 1);
      for (int64_t b = 0; b < blocks_per_table; ++b) {
        for (int64_t t = 0; t < tables; ++t) {
          int32_t* table = blocks.data() + t * blocks_per_table;
          table[b] = allocator.Take(b == 0 ? engine::BlockAllocator::kNoBlock : table[b - 1]);
        }
      }
      break;
    }
    case BlockLayout::kShuffledBlocks:
      std::iota(blocks.begin(), blocks.end(), 0);
      std::shuffle(blocks.begin(), blocks.end(), random);
      break;
    case BlockLayout::kShuffledRuns: {
      std::vector<int32_t> runs(static_cast<size_t>((num_blocks + run_blocks - 1) / run_blocks));
      std::iota(runs.begin(), runs.end(), 0);
      std::shuffle(runs.begin(), runs.end(), random);
      size_t next = 0;
      for (const int32_t run : runs) {
        for (int64_t b = int64_t{run} * run_blocks;
             b < std::min(num_blocks, (int64_t{run} + 1) * run_blocks); ++b) {
          blocks[next++] = static_cast<int32_t>(b);
        }
      }
      break;
    }
  }
  return blocks;
}

}  // namespace

const char* BlockLayoutName(BlockLayout layout) {
  switch (layout) {
    case BlockLayout::kInOrder:
      return "in order";
    case BlockLayout::kGrownSingly:
      return "grown, single blocks";
    case BlockLayout::kGrownInRuns:
      return "grown, in runs";
    case BlockLayout::kShuffledBlocks:
      return "shuffled blocks";
    case BlockLayout::kShuffledRuns:
      return "shuffled runs";
  }
  return "";
}

absl::StatusOr<AttentionBenchResult> MeasureAttention(const AttentionBenchOptions& options) {
  if (options.entries.empty() || options.num_heads <= 0 || options.num_kv_heads <= 0 ||
      options.head_dim <= 0 || options.block_size <= 0 || options.repeats <= 0 ||
      options.cache_mib <= 0 || options.num_heads % options.num_kv_heads != 0 ||
      std::any_of(options.entries.begin(), options.entries.end(),
                  [](int32_t e) { return e <= 0; })) {
    return absl::InvalidArgumentError(
        "attention bench: lengths, heads, repeats and MiB must be positive, and the query heads "
        "a multiple of the kv heads");
  }
  ThreadPool pool(options.threads > 0
                      ? options.threads
                      : std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
  AttentionBenchResult result;
  auto bandwidth = MeasureReadBandwidth(options.cache_mib << 20, pool.num_threads());
  if (!bandwidth.ok()) return bandwidth.status();
  result.read = *bandwidth;
  std::mt19937 random(static_cast<uint32_t>(options.seed));
  const int64_t q_width = int64_t{options.num_heads} * options.head_dim;
  std::vector<float> q(static_cast<size_t>(q_width)), out(q.size());
  FillRandom(q.data(), DType::kF32, q_width, random);
  const kernels::AttentionShape shape{options.num_heads, options.num_kv_heads, options.head_dim,
                                      1.0f / std::sqrt(static_cast<float>(options.head_dim))};
  for (const DType dtype : {DType::kF32, DType::kBF16}) {
    for (const int32_t entries : options.entries) {
      const int64_t blocks_per_head = (entries + options.block_size - 1) / options.block_size;
      const int64_t vector_bytes = options.head_dim * kernels::DTypeSize(dtype);
      // What one copy (one layer of one sequence) reads: keys, values and log-votes; and the
      // whole blocks it takes in the pool.
      const int64_t entry_bytes = 2 * vector_bytes + int64_t{sizeof(float)};
      const int64_t copy_bytes = int64_t{options.num_kv_heads} * entries * entry_bytes;
      const int64_t copy_blocks = int64_t{options.num_kv_heads} * blocks_per_head;
      const int64_t copies = std::max<int64_t>(
          1, (options.cache_mib << 20) / (copy_blocks * options.block_size * entry_bytes));
      const int64_t num_blocks = copies * copy_blocks;
      if (num_blocks > std::numeric_limits<int32_t>::max()) {
        return absl::InvalidArgumentError("attention bench: more blocks than a pool holds");
      }
      const int64_t slots = num_blocks * options.block_size;
      auto keys = kernels::cpu::AllocateResident(static_cast<size_t>(slots * vector_bytes), pool);
      if (!keys.ok()) return keys.status();
      auto values = kernels::cpu::AllocateResident(static_cast<size_t>(slots * vector_bytes), pool);
      if (!values.ok()) return values.status();
      auto log_votes = kernels::cpu::AllocateResident(static_cast<size_t>(slots) * 4, pool);
      if (!log_votes.ok()) return log_votes.status();
      FillRandom((*keys)->data(), dtype, slots * options.head_dim, random);
      FillRandom((*values)->data(), dtype, slots * options.head_dim, random);
      const kernels::KvPool kv_pool{.keys = (*keys)->data(),
                                    .values = (*values)->data(),
                                    .log_votes = static_cast<float*>((*log_votes)->data()),
                                    .num_blocks = static_cast<int32_t>(num_blocks),
                                    .block_size = options.block_size,
                                    .head_dim = options.head_dim,
                                    .dtype = dtype};
      for (const BlockLayout layout : kBlockLayouts) {
        const std::vector<int32_t> blocks = LayOutBlocks(
            layout, copies * options.num_kv_heads, blocks_per_head, options.block_size, random);
        std::vector<const int32_t*> tables(static_cast<size_t>(copies * options.num_kv_heads));
        for (size_t t = 0; t < tables.size(); ++t) tables[t] = blocks.data() + t * blocks_per_head;
        // The row sees every entry: entries − 1 cached and its own, already in the pool.
        const std::vector<int32_t> cached(static_cast<size_t>(options.num_kv_heads), entries - 1);
        std::vector<double> seconds;
        for (int repeat = 0; repeat < options.repeats; ++repeat) {
          const Clock::time_point start = Clock::now();
          for (int64_t copy = 0; copy < copies; ++copy) {
            const kernels::SequenceKvRef sequence{
                .first_row = 0,
                .num_rows = 1,
                .block_tables = {tables.data() + copy * options.num_kv_heads,
                                 static_cast<size_t>(options.num_kv_heads)},
                .cached_lengths = cached};
            kernels::cpu::PagedAttention(
                kernels::Tensor{q.data(), DType::kF32, 1, q_width}, kv_pool, {&sequence, 1}, shape,
                kernels::Tensor{out.data(), DType::kF32, 1, q_width}, pool);
          }
          seconds.push_back(SecondsSince(start) / static_cast<double>(copies));
        }
        AttentionBenchRow row{.kv_dtype = std::string(kernels::DTypeName(dtype)),
                              .entries = entries,
                              .layout = layout,
                              .ms = Median(seconds) * 1e3};
        row.gb_per_second = static_cast<double>(copy_bytes) / (row.ms / 1e3) / 1e9;
        row.bandwidth_share = row.gb_per_second / result.read.gb_per_second;
        result.rows.push_back(row);
      }
    }
  }
  return result;
}

void PrintAttentionTable(const AttentionBenchOptions& options, const AttentionBenchResult& result) {
  std::printf(
      "attention of one decode row per layer, %d query / %d kv heads of %d, blocks of %d, %lld "
      "MiB per length and type; read bandwidth %.1f GB/s (%s)\n",
      options.num_heads, options.num_kv_heads, options.head_dim, options.block_size,
      static_cast<long long>(options.cache_mib), result.read.gb_per_second,
      HugePageNote(result.read.huge_page_share).c_str());
  std::printf(
      "| kv cache | entries | blocks | ms | KV GB/s | of bandwidth "
      "|\n|---|---:|---|---:|---:|---:|\n");
  for (const AttentionBenchRow& row : result.rows) {
    std::printf("| %s | %d | %s | %.3f | %.1f | %.0f%% |\n", row.kv_dtype.c_str(), row.entries,
                BlockLayoutName(row.layout), row.ms, row.gb_per_second,
                100.0 * row.bandwidth_share);
  }
}

}  // namespace kvd::bench
