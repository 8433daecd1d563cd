// Device code of the tiled paged GQA prefill attention that prefill_attention.cu launches: the
// kernel and the shared memory it takes. Written against CUDA's names without including them
// (see attention_device.cuh), so that the CPU tests can run it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/attention_device.cuh"
#include "kernels/cuda/attention_plan.h"
#include "kernels/cuda/attention_tiles.cuh"
#include "kernels/kv_layout.h"

namespace kvd::kernels::cuda {
// Internal linkage: a program holds this code once, nvcc's build (prefill_attention.cu) or the
// CPU emulation's, never both under one name.
namespace {

// Dynamic shared memory of one thread block, in bytes.
size_t SharedBytes(int32_t head_dim) {
  const size_t floats = size_t{kQueryTileVectors} * head_dim                 // queries
                        + size_t{kEntryTile} * (head_dim + 1)                // keys, padded
                        + size_t{kEntryTile} * head_dim                      // values
                        + size_t{kTileWarps} * kVectorsPerWarp * kEntryTile  // probabilities
                        + kEntryTile;                                        // log-votes
  return kEntryTile * sizeof(int64_t) + floats * sizeof(float);
}

// One thread block of 4 warps per (task, tile of kQueryTileVectors query vectors): vector i of
// the task is row i / G's query head i % G of the group, so every key and value a tile loads to
// shared memory serves all the group's heads of its rows. Per entry tile, lane e of a warp
// scores entry e against the warp's 8 vectors (keys padded by one float so the lanes' reads
// fall in distinct banks, queries read as broadcast float4s), the warp updates each vector's
// online softmax (max and sum uniform across its lanes), and lane l accumulates dimensions l,
// l + 32, ... of the vectors' weighted values. Entries past a row's causal end, and vectors
// past the task's rows, weigh nothing.
template <int kDimsPerLane>
__global__ void __launch_bounds__(kTileThreads)
    PrefillAttentionKernel(const float* q, KvPool pool, const AttentionTask* tasks,
                           const int32_t* tables, AttentionShape shape, int64_t q_cols, float* out,
                           float* lse) {
  unsigned char* shared = DynamicSharedMemory();
  const int32_t head_dim = shape.head_dim;
  auto* entry_offsets = reinterpret_cast<int64_t*>(shared);
  float* q_tile = reinterpret_cast<float*>(entry_offsets + kEntryTile);
  float* k_tile = q_tile + kQueryTileVectors * head_dim;
  float* v_tile = k_tile + kEntryTile * (head_dim + 1);
  float* p_tile = v_tile + kEntryTile * head_dim;
  float* vote_tile = p_tile + kTileWarps * kVectorsPerWarp * kEntryTile;

  const AttentionTask task = tasks[blockIdx.x];
  const int32_t group = shape.num_heads / shape.num_kv_heads;
  const int32_t total_vectors = task.num_rows * group;
  const int32_t first_vector = static_cast<int32_t>(blockIdx.y) * kQueryTileVectors;
  if (first_vector >= total_vectors) return;  // uniform across the block
  const int32_t last_row = min(task.num_rows - 1, (first_vector + kQueryTileVectors - 1) / group);
  const int32_t entries_end = task.cached_length + last_row + 1;
  const int32_t* table = tables + task.table_offset;
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % kWarpSize;
  const int warp = tid / kWarpSize;
  const float neg_inf = -CUDART_INF_F;

  for (int i = tid; i < kQueryTileVectors * head_dim; i += kTileThreads) {
    const int32_t vector = first_vector + i / head_dim;
    const int32_t row = vector / group;
    const int32_t head = task.kv_head * group + vector % group;
    q_tile[i] = vector < total_vectors ? q[(static_cast<int64_t>(task.q_first_row) + row) * q_cols +
                                           static_cast<int64_t>(head) * head_dim + i % head_dim]
                                       : 0.0f;
  }

  // This warp's vectors: the row each belongs to and the entries it sees (0: an unused slot).
  int32_t visible_end[kVectorsPerWarp];
#pragma unroll
  for (int i = 0; i < kVectorsPerWarp; ++i) {
    const int32_t vector = first_vector + warp * kVectorsPerWarp + i;
    visible_end[i] = vector < total_vectors ? task.cached_length + vector / group + 1 : 0;
  }
  float m[kVectorsPerWarp], sum[kVectorsPerWarp], acc[kVectorsPerWarp][kDimsPerLane];
#pragma unroll
  for (int i = 0; i < kVectorsPerWarp; ++i) {
    m[i] = neg_inf;
    sum[i] = 0.0f;
#pragma unroll
    for (int k = 0; k < kDimsPerLane; ++k) acc[i][k] = 0.0f;
  }
  const float* warp_queries = q_tile + warp * kVectorsPerWarp * head_dim;
  float* warp_probabilities = p_tile + warp * kVectorsPerWarp * kEntryTile;

  for (int32_t tile_begin = 0; tile_begin < entries_end; tile_begin += kEntryTile) {
    __syncthreads();  // the queries are in; the previous tile is no longer read
    if (tid < kEntryTile) {
      const int32_t j = tile_begin + tid;
      const int64_t offset = j < entries_end ? EntryOffset(table, pool.block_size, j) : -1;
      entry_offsets[tid] = offset;
      vote_tile[tid] = offset >= 0 ? pool.log_votes[offset] : neg_inf;
    }
    __syncthreads();
    const float* const keys = static_cast<const float*>(pool.keys);
    const float* const values = static_cast<const float*>(pool.values);
    for (int i = tid; i < kEntryTile * head_dim; i += kTileThreads) {
      const int e = i / head_dim;
      const int d = i % head_dim;
      const int64_t offset = entry_offsets[e];
      k_tile[e * (head_dim + 1) + d] = offset >= 0 ? keys[offset * head_dim + d] : 0.0f;
      v_tile[i] = offset >= 0 ? values[offset * head_dim + d] : 0.0f;
    }
    __syncthreads();

    float dot[kVectorsPerWarp];
    const float* key = k_tile + lane * (head_dim + 1);
    TileDots(warp_queries, key, head_dim, dot);
    const int32_t j = tile_begin + lane;
    float alpha[kVectorsPerWarp];
#pragma unroll
    for (int i = 0; i < kVectorsPerWarp; ++i) {
      const float logit =
          j < visible_end[i] ? __fadd_rn(__fmul_rn(dot[i], shape.scale), vote_tile[lane]) : neg_inf;
      const float m_new = fmaxf(m[i], WarpMax(logit));
      float p = 0.0f;
      alpha[i] = 1.0f;
      if (m_new != neg_inf) {  // uniform across the warp
        alpha[i] = expf(m[i] - m_new);
        p = expf(logit - m_new);
      }
      sum[i] = fmaf(sum[i], alpha[i], GroupSum(p));
      m[i] = m_new;
      warp_probabilities[i * kEntryTile + lane] = p;
    }
    __syncwarp();
#pragma unroll
    for (int i = 0; i < kVectorsPerWarp; ++i) {
#pragma unroll
      for (int k = 0; k < kDimsPerLane; ++k) acc[i][k] *= alpha[i];
    }
    for (int e = 0; e < kEntryTile; e += 4) {
      float value[4][kDimsPerLane];
#pragma unroll
      for (int c = 0; c < 4; ++c) {
#pragma unroll
        for (int k = 0; k < kDimsPerLane; ++k) {
          const int d = lane + k * kWarpSize;
          value[c][k] = d < head_dim ? v_tile[(e + c) * head_dim + d] : 0.0f;
        }
      }
#pragma unroll
      for (int i = 0; i < kVectorsPerWarp; ++i) {
        const float4 p4 = *reinterpret_cast<const float4*>(warp_probabilities + i * kEntryTile + e);
#pragma unroll
        for (int k = 0; k < kDimsPerLane; ++k) {
          acc[i][k] = fmaf(p4.x, value[0][k], acc[i][k]);
          acc[i][k] = fmaf(p4.y, value[1][k], acc[i][k]);
          acc[i][k] = fmaf(p4.z, value[2][k], acc[i][k]);
          acc[i][k] = fmaf(p4.w, value[3][k], acc[i][k]);
        }
      }
    }
  }

#pragma unroll
  for (int i = 0; i < kVectorsPerWarp; ++i) {
    if (visible_end[i] == 0) continue;
    const int32_t vector = first_vector + warp * kVectorsPerWarp + i;
    const int64_t row = static_cast<int64_t>(task.q_first_row) + vector / group;
    const int32_t head = task.kv_head * group + vector % group;
#pragma unroll
    for (int k = 0; k < kDimsPerLane; ++k) {
      const int d = lane + k * kWarpSize;
      if (d < head_dim)
        out[row * q_cols + static_cast<int64_t>(head) * head_dim + d] = acc[i][k] / sum[i];
    }
    if (lse != nullptr && lane == 0) lse[row * shape.num_heads + head] = m[i] + logf(sum[i]);
  }
}

}  // namespace
}  // namespace kvd::kernels::cuda
