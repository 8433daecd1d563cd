// Device code of the kernels that kv_entries.cu launches to move KV entries into, within and out
// of the paged pool, with the launch geometry they assume. Written against CUDA's names without
// including them (see attention_device.cuh), so that the CPU tests can run it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/kv_layout.h"

namespace kvd::kernels::cuda {
// Internal linkage: a program holds this code once, nvcc's build (kv_entries.cu) or the CPU
// emulation's, never both under one name.
namespace {

constexpr int kWarpSize = 32;
// Each warp moves one entry at a time: its lanes stride over head_dim, so the key and value
// reads and writes are contiguous per warp without dividing flat indices by head_dim.
constexpr int kWarpsPerBlock = 8;
constexpr int kThreads = kWarpsPerBlock * kWarpSize;
// Grids stop growing here; warps stride over the remaining entries.
constexpr int64_t kMaxBlocks = 8192;

int BlocksFor(int64_t count) {
  return static_cast<int>(std::min((count + kWarpsPerBlock - 1) / kWarpsPerBlock, kMaxBlocks));
}

__device__ int64_t FirstEntry() {
  return static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
}

__device__ int64_t EntryStride() { return static_cast<int64_t>(gridDim.x) * kWarpsPerBlock; }

__device__ void CopyHead(const float* __restrict__ src, float* __restrict__ dst, int32_t head_dim) {
  for (int32_t d = threadIdx.x % kWarpSize; d < head_dim; d += kWarpSize) dst[d] = src[d];
}

__global__ void AppendKvKernel(const float* __restrict__ k, const float* __restrict__ v,
                               int64_t cols, const int32_t* __restrict__ rows,
                               const int32_t* __restrict__ heads, const int64_t* __restrict__ slots,
                               int64_t count, KvPool pool) {
  const int32_t head_dim = pool.head_dim;
  float* const pool_keys = static_cast<float*>(pool.keys);
  float* const pool_values = static_cast<float*>(pool.values);
  for (int64_t i = FirstEntry(); i < count; i += EntryStride()) {
    const int64_t src =
        static_cast<int64_t>(rows[i]) * cols + static_cast<int64_t>(heads[i]) * head_dim;
    const int64_t slot = slots[i];
    const int64_t dst = slot * head_dim;
    CopyHead(k + src, pool_keys + dst, head_dim);
    CopyHead(v + src, pool_values + dst, head_dim);
    if (threadIdx.x % kWarpSize == 0) pool.log_votes[slot] = 0.0f;
  }
}

// Source and destination slots are disjoint (the header's contract), so no entry is both read
// and written.
__global__ void CopyKvSlotsKernel(const int64_t* __restrict__ src, const int64_t* __restrict__ dst,
                                  int64_t count, KvPool pool) {
  const int32_t head_dim = pool.head_dim;
  float* const pool_keys = static_cast<float*>(pool.keys);
  float* const pool_values = static_cast<float*>(pool.values);
  for (int64_t i = FirstEntry(); i < count; i += EntryStride()) {
    const int64_t from = src[i];
    const int64_t to = dst[i];
    CopyHead(pool_keys + from * head_dim, pool_keys + to * head_dim, head_dim);
    CopyHead(pool_values + from * head_dim, pool_values + to * head_dim, head_dim);
    if (threadIdx.x % kWarpSize == 0) pool.log_votes[to] = pool.log_votes[from];
  }
}

__global__ void GatherKvSlotsKernel(const int64_t* __restrict__ slots, int64_t count, KvPool pool,
                                    float* __restrict__ keys, float* __restrict__ values,
                                    float* __restrict__ log_votes) {
  const int32_t head_dim = pool.head_dim;
  float* const pool_keys = static_cast<float*>(pool.keys);
  float* const pool_values = static_cast<float*>(pool.values);
  for (int64_t i = FirstEntry(); i < count; i += EntryStride()) {
    const int64_t slot = slots[i];
    CopyHead(pool_keys + slot * head_dim, keys + i * head_dim, head_dim);
    CopyHead(pool_values + slot * head_dim, values + i * head_dim, head_dim);
    if (threadIdx.x % kWarpSize == 0) log_votes[i] = pool.log_votes[slot];
  }
}

__global__ void ScatterKvSlotsKernel(const int64_t* __restrict__ slots, int64_t count,
                                     const float* __restrict__ keys,
                                     const float* __restrict__ values,
                                     const float* __restrict__ log_votes, KvPool pool) {
  const int32_t head_dim = pool.head_dim;
  float* const pool_keys = static_cast<float*>(pool.keys);
  float* const pool_values = static_cast<float*>(pool.values);
  for (int64_t i = FirstEntry(); i < count; i += EntryStride()) {
    const int64_t slot = slots[i];
    CopyHead(keys + i * head_dim, pool_keys + slot * head_dim, head_dim);
    CopyHead(values + i * head_dim, pool_values + slot * head_dim, head_dim);
    if (threadIdx.x % kWarpSize == 0) pool.log_votes[slot] = log_votes[i];
  }
}

}  // namespace
}  // namespace kvd::kernels::cuda
