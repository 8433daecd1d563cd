// The paged KV cache as kernels see it: a pool of fixed-size blocks, each holding the keys
// (after RoPE), values and log-votes of up to block_size entries of ONE (layer, kv head).
// A sequence has one block table and one length per (layer, kv head), so heads may keep
// different numbers of entries (pruned or merged caches) and a length may be zero.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "kernels/dtype.h"

namespace kvd::kernels {

// Block storage for every layer and head. Entry e of block b is at element
// (b * block_size + e) * head_dim of keys, likewise of values, and at log_votes[b * block_size +
// e]. Keys and values are of `dtype`, f32 or bf16 (half the bytes to stream; every computation on
// them is in f32); log-votes are always f32.
struct KvPool {
  void* keys = nullptr;
  void* values = nullptr;
  float* log_votes = nullptr;
  int32_t num_blocks = 0;
  int32_t block_size = 0;
  int32_t head_dim = 0;
  DType dtype = DType::kF32;

  // Bytes of one entry's key (or value).
  size_t vector_bytes() const { return static_cast<size_t>(head_dim) * DTypeSize(dtype); }
};

// What a configuration or a flag may name as the type of the cache's keys and values.
inline constexpr std::array<std::string_view, 2> kKvCacheTypeChoices = {"f32", "bf16"};

// How attention probabilities fold into per-entry scores.
enum class ScoreReduce {
  kMax,  // the highest probability any counted query gave the entry (KVzip)
  kSum,  // the probabilities added up (H2O, SnapKV)
};

// Per-entry attention scores a step collects for one sequence at one layer (KV compression):
// for every query row r >= first_row of the sequence's new rows and every query head of kv
// head h, the softmax probability of entry j (cached or new, log-vote included) folds into
// scores[h * stride + j]. The scores persist across steps and start at zero, so both
// reductions accumulate. Memory of the backend, like the pool.
struct AttentionScoresRef {
  float* scores = nullptr;  // null: the sequence collects no scores
  int32_t stride = 0;       // >= cached_lengths[h] + num_rows for every h
  int32_t first_row = 0;
  ScoreReduce reduce = ScoreReduce::kMax;
};

// One sequence's cache at one layer, for one forward step. The sequence's new tokens are rows
// [first_row, first_row + num_rows) of the step's q/k/v tensors. cached_lengths[h] entries of
// kv head h precede them; the new rows are appended after those.
struct SequenceKvRef {
  int32_t first_row = 0;
  int32_t num_rows = 0;
  std::span<const int32_t* const> block_tables;  // [num_kv_heads], each ≥ ceil(length / bs)
  std::span<const int32_t> cached_lengths;       // [num_kv_heads]
  AttentionScoresRef scores;                     // optional
};

// An entry's place in the pool: block * block_size + index within the block.
using KvSlot = int64_t;

// The slot of entry `index` of one (layer, kv head) whose blocks are listed in `block_table`.
inline KvSlot EntrySlot(const KvPool& pool, const int32_t* block_table, int32_t index) {
  return static_cast<KvSlot>(block_table[index / pool.block_size]) * pool.block_size +
         index % pool.block_size;
}

// The slots of entries [0, slots.size()) of one (layer, kv head): EntrySlot of each, block by
// block, with no division per entry.
inline void EntrySlots(const KvPool& pool, const int32_t* block_table, std::span<KvSlot> slots) {
  const auto count = static_cast<int64_t>(slots.size());
  for (int64_t first = 0, block = 0; first < count; first += pool.block_size, ++block) {
    const KvSlot base = KvSlot{block_table[block]} * pool.block_size;
    const int64_t in_block = std::min<int64_t>(pool.block_size, count - first);
    for (int64_t e = 0; e < in_block; ++e) slots[first + e] = base + e;
  }
}

// The attention geometry of a model.
struct AttentionShape {
  int32_t num_heads = 0;     // query heads
  int32_t num_kv_heads = 0;  // a kv head serves num_heads / num_kv_heads query heads (GQA)
  int32_t head_dim = 0;
  float scale = 0.0f;  // applied to q·k, usually 1/sqrt(head_dim)
};

}  // namespace kvd::kernels
