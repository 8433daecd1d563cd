#include "kernels/cpu/kv_entries.h"

#include <cstring>

namespace kvd::kernels::cpu {
namespace {

char* VectorAt(void* base, const KvPool& pool, KvSlot slot) {
  return static_cast<char*>(base) + static_cast<size_t>(slot) * pool.vector_bytes();
}

void StoreVector(const KvPool& pool, void* base, KvSlot slot, const float* from) {
  char* to = VectorAt(base, pool, slot);
  if (pool.dtype == DType::kF32) {
    std::memcpy(to, from, pool.vector_bytes());
    return;
  }
  auto* bits = reinterpret_cast<uint16_t*>(to);
  for (int32_t d = 0; d < pool.head_dim; ++d) bits[d] = FloatToBF16(from[d]);
}

void LoadVector(const KvPool& pool, void* base, KvSlot slot, float* to) {
  const char* from = VectorAt(base, pool, slot);
  for (int32_t d = 0; d < pool.head_dim; ++d) to[d] = ElementAsFloat(from, pool.dtype, d);
}

}  // namespace

void AppendKvEntries(const Tensor& k, const Tensor& v, const KvPool& pool,
                     std::span<const SequenceKvRef> sequences) {
  for (const SequenceKvRef& seq : sequences) {
    const int32_t num_kv_heads = static_cast<int32_t>(seq.block_tables.size());
    for (int32_t h = 0; h < num_kv_heads; ++h) {
      for (int32_t i = 0; i < seq.num_rows; ++i) {
        const KvSlot slot = EntrySlot(pool, seq.block_tables[h], seq.cached_lengths[h] + i);
        const int64_t src =
            (static_cast<int64_t>(seq.first_row) + i) * k.cols + int64_t{h} * pool.head_dim;
        StoreVector(pool, pool.keys, slot, k.f32() + src);
        StoreVector(pool, pool.values, slot, v.f32() + src);
        pool.log_votes[slot] = 0.0f;
      }
    }
  }
}

void CopyKvEntries(const KvPool& pool, std::span<const KvSlot> src, std::span<const KvSlot> dst) {
  const size_t bytes = pool.vector_bytes();
  for (size_t i = 0; i < src.size(); ++i) {
    std::memcpy(VectorAt(pool.keys, pool, dst[i]), VectorAt(pool.keys, pool, src[i]), bytes);
    std::memcpy(VectorAt(pool.values, pool, dst[i]), VectorAt(pool.values, pool, src[i]), bytes);
    pool.log_votes[dst[i]] = pool.log_votes[src[i]];
  }
}

void ReadKvEntries(const KvPool& pool, std::span<const KvSlot> slots, float* keys, float* values,
                   float* log_votes) {
  for (size_t i = 0; i < slots.size(); ++i) {
    LoadVector(pool, pool.keys, slots[i], keys + i * pool.head_dim);
    LoadVector(pool, pool.values, slots[i], values + i * pool.head_dim);
    log_votes[i] = pool.log_votes[slots[i]];
  }
}

void WriteKvEntries(const KvPool& pool, std::span<const KvSlot> slots, const float* keys,
                    const float* values, const float* log_votes) {
  for (size_t i = 0; i < slots.size(); ++i) {
    StoreVector(pool, pool.keys, slots[i], keys + i * pool.head_dim);
    StoreVector(pool, pool.values, slots[i], values + i * pool.head_dim);
    pool.log_votes[slots[i]] = log_votes[i];
  }
}

}  // namespace kvd::kernels::cpu
