// Moving KV entries in and out of the paged pool (kernels/kv_layout.h) on the device: appending
// a step's keys and values, copying entries between slots, and gathering or scattering entries
// through dense arrays. Slots are block * block_size + index, computed on the host from the
// block tables. Every pointer is device memory; launches are asynchronous on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/kv_layout.h"

namespace kvd::kernels::cuda {

// For i < count: entry slots[i] gets key k[rows[i], heads[i] * head_dim ...] and the value
// likewise from v (row stride `cols`), log-vote 0.
void LaunchAppendKv(const float* k, const float* v, int64_t cols, const int32_t* rows,
                    const int32_t* heads, const int64_t* slots, int64_t count,
                    const KvPool& pool, cudaStream_t stream);
// Entry dst[i] becomes a copy of entry src[i] (key, value, log-vote); dst slots are distinct
// and none is a src slot.
void LaunchCopyKvSlots(const int64_t* src, const int64_t* dst, int64_t count, const KvPool& pool,
                       cudaStream_t stream);
// keys/values [count, head_dim] and log_votes [count] from entries slots[i].
void LaunchGatherKvSlots(const int64_t* slots, int64_t count, const KvPool& pool, float* keys,
                         float* values, float* log_votes, cudaStream_t stream);
// Entries slots[i] from keys/values [count, head_dim] and log_votes [count].
void LaunchScatterKvSlots(const int64_t* slots, int64_t count, const float* keys,
                          const float* values, const float* log_votes, const KvPool& pool,
                          cudaStream_t stream);

}  // namespace kvd::kernels::cuda
