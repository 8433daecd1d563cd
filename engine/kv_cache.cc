#include "engine/kv_cache.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/check.h"

namespace kvd::engine {

size_t KvBlockPool::BlockBytes(int32_t block_size, int32_t head_dim, kernels::DType dtype) {
  return static_cast<size_t>(block_size) *
         (2 * static_cast<size_t>(head_dim) * kernels::DTypeSize(dtype) + sizeof(float));
}

int64_t KvBlockPool::BlocksInBytes(size_t bytes, int32_t block_size, int32_t head_dim,
                                   kernels::DType dtype) {
  return static_cast<int64_t>(bytes / BlockBytes(block_size, head_dim, dtype));
}

absl::StatusOr<std::unique_ptr<KvBlockPool>> KvBlockPool::Create(kernels::Backend& backend,
                                                                 const KvPoolOptions& options) {
  if (options.num_blocks <= 0 || options.block_size <= 0 || options.head_dim <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kv pool: num_blocks (", options.num_blocks, "), block_size (", options.block_size,
        ") and head_dim (", options.head_dim, ") must be positive"));
  }
  if (auto status = backend.CheckKvCacheType(options.dtype); !status.ok()) return status;
  const size_t entries = static_cast<size_t>(options.num_blocks) * options.block_size;
  const size_t vector_bytes = entries * options.head_dim * kernels::DTypeSize(options.dtype);
  auto keys = backend.Allocate(vector_bytes);
  if (!keys.ok()) return keys.status();
  auto values = backend.Allocate(vector_bytes);
  if (!values.ok()) return values.status();
  auto log_votes = backend.Allocate(entries * sizeof(float));
  if (!log_votes.ok()) return log_votes.status();
  // The allocator's and the counts' memory only once the backend has given the pool's.
  std::unique_ptr<KvBlockPool> pool(new KvBlockPool(backend, options));
  pool->keys_ = *std::move(keys);
  pool->values_ = *std::move(values);
  pool->log_votes_ = *std::move(log_votes);
  pool->storage_ = kernels::KvPool{
      pool->keys_->data(), pool->values_->data(), static_cast<float*>(pool->log_votes_->data()),
      options.num_blocks,  options.block_size,    options.head_dim,
      options.dtype};
  return pool;
}

KvBlockPool::KvBlockPool(kernels::Backend& backend, const KvPoolOptions& options)
    : backend_(backend),
      allocator_(options.num_blocks, BlockAllocator::RunBlocks(options.block_size)),
      ref_counts_(static_cast<size_t>(options.num_blocks), 0) {}

int32_t KvBlockPool::Allocate(int32_t after) {
  const int32_t block = allocator_.Take(after);
  if (block != BlockAllocator::kNoBlock) ref_counts_[block] = 1;
  return block;
}

void KvBlockPool::AddRef(int32_t block) {
  KVD_CHECK(ref_counts_[block] > 0);
  ++ref_counts_[block];
}

void KvBlockPool::Release(int32_t block) {
  KVD_CHECK(ref_counts_[block] > 0);
  if (--ref_counts_[block] == 0) allocator_.Give(block);
}

absl::Status KvBlockPool::CopyEntries(int32_t src, int32_t dst, int32_t count) {
  std::vector<kernels::KvSlot> from(count), to(count);
  for (int32_t i = 0; i < count; ++i) {
    from[i] = int64_t{src} * block_size() + i;
    to[i] = int64_t{dst} * block_size() + i;
  }
  return backend_.CopyKvSlots(storage_, from, to);
}

SequenceKv::SequenceKv(int32_t num_layers, int32_t num_kv_heads)
    : num_layers_(num_layers),
      num_kv_heads_(num_kv_heads),
      block_tables_(static_cast<size_t>(num_layers) * num_kv_heads),
      lengths_(static_cast<size_t>(num_layers) * num_kv_heads, 0) {}

void SequenceKv::ShareFrom(const SequenceKv& source, KvBlockPool& pool) {
  block_tables_ = source.block_tables_;
  for (const auto& table : block_tables_) {
    for (int32_t block : table) pool.AddRef(block);
  }
  lengths_ = source.lengths_;
  next_position_ = source.next_position_;
}

int64_t SequenceKv::num_blocks() const {
  int64_t blocks = 0;
  for (const auto& table : block_tables_) blocks += std::ssize(table);
  return blocks;
}

void SequenceKv::AppendSharedBlocks(KvBlockPool& pool, std::span<const int32_t> blocks,
                                    int32_t entries) {
  KVD_CHECK(blocks.size() == block_tables_.size());
  KVD_CHECK(entries >= 1 && entries <= pool.block_size());
  for (size_t i = 0; i < block_tables_.size(); ++i) {
    KVD_CHECK(lengths_[i] == next_position_);
    KVD_CHECK(lengths_[i] % pool.block_size() == 0);
    pool.AddRef(blocks[i]);
    block_tables_[i].push_back(blocks[i]);
    lengths_[i] += entries;
  }
  next_position_ += entries;
}

bool SequenceKv::LastBlockIsShared(const KvBlockPool& pool, size_t index) const {
  const int32_t in_last_block = lengths_[index] % pool.block_size();
  return in_last_block != 0 && pool.ref_count(block_tables_[index].back()) > 1;
}

int64_t SequenceKv::BlocksToReserve(const KvBlockPool& pool, int32_t count) const {
  if (count <= 0) return 0;
  const int32_t block_size = pool.block_size();
  int64_t blocks = 0;
  for (size_t i = 0; i < block_tables_.size(); ++i) {
    const int64_t needed = (int64_t{lengths_[i]} + count + block_size - 1) / block_size;
    blocks += std::max<int64_t>(0, needed - static_cast<int64_t>(block_tables_[i].size()));
    if (LastBlockIsShared(pool, i)) ++blocks;
  }
  return blocks;
}

absl::Status SequenceKv::Reserve(KvBlockPool& pool, int32_t count) {
  for (size_t i = 0; i < block_tables_.size(); ++i) {
    if (auto status = ReserveHead(pool, i, count); !status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status SequenceKv::ReserveEach(KvBlockPool& pool, std::span<const int32_t> counts) {
  if (counts.size() != block_tables_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("kv cache: ", counts.size(), " counts for ",
                                                   block_tables_.size(),
                                                   " (layer, kv head) pairs"));
  }
  for (size_t i = 0; i < block_tables_.size(); ++i) {
    if (auto status = ReserveHead(pool, i, counts[i]); !status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status SequenceKv::ReserveHead(KvBlockPool& pool, size_t index, int32_t count) {
  const int32_t block_size = pool.block_size();
  auto exhausted = [&] {
    return absl::ResourceExhaustedError(absl::StrCat("kv cache: no free block for ", count,
                                                     " more entries (pool of ", pool.num_blocks(),
                                                     " blocks of ", block_size, " entries)"));
  };
  std::vector<int32_t>& table = block_tables_[index];
  if (count > 0 && LastBlockIsShared(pool, index)) {
    const int32_t copy =
        pool.Allocate(table.size() > 1 ? table[table.size() - 2] : BlockAllocator::kNoBlock);
    if (copy < 0) return exhausted();
    const int32_t shared = table.back();
    if (absl::Status copied = pool.CopyEntries(shared, copy, lengths_[index] % block_size);
        !copied.ok()) {
      pool.Release(copy);
      return copied;
    }
    pool.Release(shared);
    table.back() = copy;
  }
  const int64_t needed = (int64_t{lengths_[index]} + count + block_size - 1) / block_size;
  while (static_cast<int64_t>(table.size()) < needed) {
    const int32_t block = pool.Allocate(table.empty() ? BlockAllocator::kNoBlock : table.back());
    if (block < 0) return exhausted();
    table.push_back(block);
  }
  return absl::OkStatus();
}

void SequenceKv::Advance(int32_t count) {
  for (int32_t& length : lengths_) length += count;
  next_position_ += count;
}

void SequenceKv::AdvanceEach(std::span<const int32_t> counts) {
  for (size_t i = 0; i < lengths_.size(); ++i) lengths_[i] += counts[i];
}

absl::StatusOr<std::vector<EntryMove>> SequenceKv::RemoveEntries(KvBlockPool& pool, int32_t layer,
                                                                 int32_t kv_head,
                                                                 std::span<const int32_t> indices) {
  const size_t head = Index(layer, kv_head);
  const int32_t length = lengths_[head];
  std::vector<bool> removed(length, false);
  for (int32_t index : indices) {
    if (index < 0 || index >= length || removed[index]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kv cache: entry ", index, " is out of range [0, ", length, ") or given twice"));
    }
    removed[index] = true;
  }
  const int32_t new_length = length - static_cast<int32_t>(indices.size());
  // Holes below the new length take the kept entries above it, in order.
  std::vector<EntryMove> moves;
  int32_t source = new_length;
  for (int32_t hole = 0; hole < new_length; ++hole) {
    if (!removed[hole]) continue;
    while (removed[source]) ++source;
    moves.push_back({source++, hole});
  }
  const int32_t block_size = pool.block_size();
  const std::vector<int32_t>& table = block_tables_[head];
  for (const EntryMove& move : moves) {
    for (int32_t index : {move.from, move.to}) {
      if (pool.ref_count(table[index / block_size]) > 1) {
        return absl::FailedPreconditionError(
            absl::StrCat("kv cache: entry ", index, " of layer ", layer, " head ", kv_head,
                         " lies in a shared block; shared entries are never edited in place"));
      }
    }
  }
  std::vector<kernels::KvSlot> from, to;
  for (const EntryMove& move : moves) {
    from.push_back(slot(layer, kv_head, move.from, block_size));
    to.push_back(slot(layer, kv_head, move.to, block_size));
  }
  if (!moves.empty()) {
    if (absl::Status moved = pool.backend().CopyKvSlots(pool.storage(), from, to); !moved.ok()) {
      return moved;
    }
  }
  std::vector<int32_t>& blocks = block_tables_[head];
  const size_t needed = static_cast<size_t>((new_length + block_size - 1) / block_size);
  while (blocks.size() > needed) {
    pool.Release(blocks.back());
    blocks.pop_back();
  }
  lengths_[head] = new_length;
  return moves;
}

absl::Status SequenceKv::DropLast(KvBlockPool& pool, int32_t count) {
  if (count < 0 || count > next_position_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "kv cache: cannot drop ", count, " entries of a sequence at position ", next_position_));
  }
  const int32_t block_size = pool.block_size();
  for (size_t head = 0; head < lengths_.size(); ++head) {
    const int32_t length = lengths_[head];
    if (length < count) {
      return absl::FailedPreconditionError(
          absl::StrCat("kv cache: cannot drop ", count, " entries of a head that holds ", length));
    }
    for (int32_t index = length - count; index < length; ++index) {
      if (pool.ref_count(block_tables_[head][index / block_size]) > 1) {
        return absl::FailedPreconditionError(
            absl::StrCat("kv cache: entry ", index,
                         " lies in a shared block; shared entries are never dropped"));
      }
    }
  }
  for (size_t head = 0; head < lengths_.size(); ++head) {
    lengths_[head] -= count;
    std::vector<int32_t>& blocks = block_tables_[head];
    const size_t needed = static_cast<size_t>((lengths_[head] + block_size - 1) / block_size);
    while (blocks.size() > needed) {
      pool.Release(blocks.back());
      blocks.pop_back();
    }
  }
  next_position_ -= count;
  return absl::OkStatus();
}

void SequenceKv::Release(KvBlockPool& pool) {
  for (auto& table : block_tables_) {
    for (int32_t block : table) pool.Release(block);
    table.clear();
  }
  std::fill(lengths_.begin(), lengths_.end(), 0);
  next_position_ = 0;
}

}  // namespace kvd::engine
