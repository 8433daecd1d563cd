// Moving entries into, within and out of a KV pool on the CPU, for either type of its keys and
// values (f32, or bf16 rounded to nearest even on the way in): the appends of a forward step,
// copy-on-write, and the f32 host arrays that compression and KeepKV work on.
#pragma once

#include <span>

#include "kernels/kv_layout.h"
#include "kernels/tensor.h"

namespace kvd::kernels::cpu {

// Writes the new rows of k and v after each sequence's cached entries, with log-vote 0
// (Backend::AppendKv).
void AppendKvEntries(const Tensor& k, const Tensor& v, const KvPool& pool,
                     std::span<const SequenceKvRef> sequences);
void CopyKvEntries(const KvPool& pool, std::span<const KvSlot> src, std::span<const KvSlot> dst);
void ReadKvEntries(const KvPool& pool, std::span<const KvSlot> slots, float* keys, float* values,
                   float* log_votes);
void WriteKvEntries(const KvPool& pool, std::span<const KvSlot> slots, const float* keys,
                    const float* values, const float* log_votes);

}  // namespace kvd::kernels::cpu
