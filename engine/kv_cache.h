// The paged KV cache: a pool of fixed-size, ref-counted blocks in backend memory, and each
// sequence's block tables and lengths per (layer, kv head). Sequences may share blocks (a
// common prefix); appending after a shared, partially filled block copies it first. See
// kernels/kv_layout.h for the entry layout. Thread: the scheduler thread owns the pool and every
// SequenceKv.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/block_allocator.h"
#include "kernels/backend.h"
#include "kernels/kv_layout.h"

namespace kvd::engine {

struct KvPoolOptions {
  int32_t num_blocks = 0;
  int32_t block_size = 16;  // entries per block
  int32_t head_dim = 0;
  kernels::DType dtype = kernels::DType::kF32;  // of keys and values: f32 or bf16
};

class KvBlockPool {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<KvBlockPool>> Create(
      kernels::Backend& backend, const KvPoolOptions& options);

  // Bytes one block takes (keys and values of `dtype`, and f32 log-votes).
  static size_t BlockBytes(int32_t block_size, int32_t head_dim, kernels::DType dtype);
  // How many blocks fit in `bytes`.
  static int64_t BlocksInBytes(size_t bytes, int32_t block_size, int32_t head_dim,
                               kernels::DType dtype);

  const kernels::KvPool& storage() const { return storage_; }
  int32_t block_size() const { return storage_.block_size; }
  int32_t num_blocks() const { return storage_.num_blocks; }
  int32_t num_free_blocks() const { return allocator_.num_free(); }
  int32_t num_used_blocks() const { return num_blocks() - num_free_blocks(); }
  // Fraction of blocks in use, in [0, 1].
  double usage() const { return static_cast<double>(num_used_blocks()) / num_blocks(); }
  int32_t ref_count(int32_t block) const { return ref_counts_[block]; }
  kernels::Backend& backend() const { return backend_; }

  // A block with reference count 1, or -1 when the pool is exhausted. `after`: the last block of
  // the table the block goes to (BlockAllocator::kNoBlock for an empty one), so that the table's
  // blocks come in runs of adjacent blocks (BlockAllocator::Take).
  int32_t Allocate(int32_t after);
  void AddRef(int32_t block);
  // Drops one reference; the block returns to the pool at zero.
  void Release(int32_t block);
  // Copies the first `count` entries of block `src` into block `dst`; the backend's error if the
  // copy fails.
  [[nodiscard]] absl::Status CopyEntries(int32_t src, int32_t dst, int32_t count);

 private:
  KvBlockPool(kernels::Backend& backend, const KvPoolOptions& options);

  kernels::Backend& backend_;
  std::unique_ptr<kernels::DeviceBuffer> keys_, values_, log_votes_;
  kernels::KvPool storage_;
  BlockAllocator allocator_;
  std::vector<int32_t> ref_counts_;
};

// An entry moved from one index of a (layer, kv head) to another.
struct EntryMove {
  int32_t from = 0;
  int32_t to = 0;
};

// One sequence's cache: a block table and a length per (layer, kv head), and the position the
// next token takes (the uncompressed length, which pruning and merging do not lower).
class SequenceKv {
 public:
  SequenceKv(int32_t num_layers, int32_t num_kv_heads);
  SequenceKv(const SequenceKv&) = delete;
  SequenceKv& operator=(const SequenceKv&) = delete;

  int32_t num_layers() const { return num_layers_; }
  int32_t num_kv_heads() const { return num_kv_heads_; }
  int32_t next_position() const { return next_position_; }
  int32_t length(int32_t layer, int32_t kv_head) const { return lengths_[Index(layer, kv_head)]; }
  const std::vector<int32_t>& blocks(int32_t layer, int32_t kv_head) const {
    return block_tables_[Index(layer, kv_head)];
  }
  // Where entry `index` of (layer, kv head) lives in the pool; the entry must be reserved.
  kernels::KvSlot slot(int32_t layer, int32_t kv_head, int32_t index, int32_t block_size) const {
    return int64_t{blocks(layer, kv_head)[index / block_size]} * block_size + index % block_size;
  }
  // Pool blocks in the tables of every (layer, kv head), shared ones included.
  int64_t num_blocks() const;
  // Lengths of all kv heads of a layer, contiguous.
  std::span<const int32_t> layer_lengths(int32_t layer) const {
    return {lengths_.data() + Index(layer, 0), static_cast<size_t>(num_kv_heads_)};
  }

  // Makes this empty sequence a copy of `source` that shares all its blocks (one more
  // reference each): a common prefix computed once, such as the prompt of several completions.
  void ShareFrom(const SequenceKv& source, KvBlockPool& pool);
  // Appends one full block per (layer, kv head), `blocks` layer-major, shared with whoever holds
  // them (one more reference each), of which the first `entries` (1..block_size) count: a cached
  // prefix block. Every head must be at `next_position()` on a block boundary (an uncompressed
  // sequence); the next position moves by `entries`. With fewer entries than the block holds, the
  // first append copies the block (copy-on-write).
  void AppendSharedBlocks(KvBlockPool& pool, std::span<const int32_t> blocks, int32_t entries);
  // Blocks Reserve(count) would take from the pool, copies of shared blocks included.
  int64_t BlocksToReserve(const KvBlockPool& pool, int32_t count) const;
  // Makes room for `count` more entries in every (layer, kv head): new blocks as needed, and a
  // private copy of a shared, partially filled last block. On ResourceExhausted the sequence
  // keeps what it had (blocks taken so far stay reserved until Release).
  [[nodiscard]] absl::Status Reserve(KvBlockPool& pool, int32_t count);
  // Reserve with a count per (layer, kv head), layer-major: heads that grow unevenly (a cache
  // assembled or loaded entry by entry rather than computed by a step).
  [[nodiscard]] absl::Status ReserveEach(KvBlockPool& pool, std::span<const int32_t> counts);
  // Records that `count` entries were appended everywhere (after a forward step).
  void Advance(int32_t count);
  // Records counts[i] entries written into (layer, kv head) i, layer-major, without moving the
  // next position.
  void AdvanceEach(std::span<const int32_t> counts);
  // Sets the position the next token takes: the uncompressed length of a cache that holds
  // fewer entries (pruned), or any later position (a probe that must not overlap the cache).
  void set_next_position(int32_t position) { next_position_ = position; }
  // Removes entries `indices` (distinct, any order) of (layer, kv head), as an eviction or a
  // merge does: the last entries move into the holes (attention does not depend on the order of
  // cached entries), the head gets shorter, and blocks left empty go back to the pool. The next
  // position does not change. Returns the moves made, so that per-entry state (votes, scores)
  // can follow. InvalidArgument for an index out of range or given twice; FailedPrecondition,
  // changing nothing, when a hole or a moved entry lies in a block another sequence shares (a
  // shared prefix is never edited in place).
  [[nodiscard]] absl::StatusOr<std::vector<EntryMove>> RemoveEntries(
      KvBlockPool& pool, int32_t layer, int32_t kv_head, std::span<const int32_t> indices);
  // Drops the last `count` entries of every (layer, kv head) and moves the next position back
  // by `count`: entries a step appended that turned out unwanted (rejected draft tokens).
  // Blocks left empty go back to the pool. FailedPrecondition, changing nothing, when a head
  // holds fewer than `count` entries or a dropped entry lies in a block another sequence shares.
  [[nodiscard]] absl::Status DropLast(KvBlockPool& pool, int32_t count);
  // Returns every block to the pool; the sequence is empty afterwards.
  void Release(KvBlockPool& pool);

 private:
  absl::Status ReserveHead(KvBlockPool& pool, size_t index, int32_t count);
  // True when appending to (layer, kv head) `index` would write into a block others share.
  bool LastBlockIsShared(const KvBlockPool& pool, size_t index) const;

  size_t Index(int32_t layer, int32_t kv_head) const {
    return static_cast<size_t>(layer) * num_kv_heads_ + kv_head;
  }

  int32_t num_layers_;
  int32_t num_kv_heads_;
  int32_t next_position_ = 0;
  std::vector<std::vector<int32_t>> block_tables_;
  std::vector<int32_t> lengths_;
};

}  // namespace kvd::engine
