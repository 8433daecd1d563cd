// Device code of the per-entry score folding that attention_scores.cu launches: the kernel and
// the shared memory it takes. Written against CUDA's names without including them (see
// attention_device.cuh), so that the CPU tests can run it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/attention_device.cuh"
#include "kernels/cuda/attention_plan.h"
#include "kernels/cuda/attention_tiles.cuh"
#include "kernels/kv_layout.h"

namespace kvd::kernels::cuda {
// Internal linkage: a program holds this code once, nvcc's build (attention_scores.cu) or the
// CPU emulation's, never both under one name.
namespace {

size_t SharedBytes(int32_t head_dim) {
  const size_t floats = size_t{kEntryTile} * (head_dim + 1)     // keys, padded
                        + size_t{kQueryTileVectors} * head_dim  // queries
                        + kQueryTileVectors                     // their log-sum-exps
                        + kEntryTile                            // log-votes
                        + size_t{kTileWarps} * kEntryTile;      // the warps' folds
  return floats * sizeof(float);
}

// One thread block of 4 warps per (task, tile of kEntryTile entries, block of
// kScoreRowsPerBlock rows). The block loads its entries' keys once, then walks the rows' query
// vectors (row, query head of the group) kQueryTileVectors at a time: lane e of a warp computes
// entry e's probability under each of the warp's 8 vectors and folds it into a running max or
// sum. Rows that see none of the tile's entries are skipped; the warps' folds combine in shared
// memory, and one atomic per entry and block folds them into the scores (probabilities are
// >= 0 and scores start at 0, so the max compares float bits as ints).
__global__ void __launch_bounds__(kTileThreads)
    AttentionScoresKernel(const float* q, KvPool pool, const ScoreTask* tasks,
                          const int32_t* tables, AttentionShape shape, int64_t q_cols,
                          const float* lse) {
  unsigned char* shared = DynamicSharedMemory();
  const int32_t head_dim = shape.head_dim;
  float* q_tile = reinterpret_cast<float*>(shared);
  float* k_tile = q_tile + kQueryTileVectors * head_dim;
  float* lse_tile = k_tile + kEntryTile * (head_dim + 1);
  float* vote_tile = lse_tile + kQueryTileVectors;
  float* folds = vote_tile + kEntryTile;

  const ScoreTask score_task = tasks[blockIdx.x];
  const AttentionTask& task = score_task.rows;
  const int32_t group = shape.num_heads / shape.num_kv_heads;
  const int32_t entries = task.cached_length + task.num_rows;
  const int32_t tile_begin = static_cast<int32_t>(blockIdx.y) * kEntryTile;
  const int32_t block_rows_begin =
      score_task.first_row + static_cast<int32_t>(blockIdx.z) * kScoreRowsPerBlock;
  const int32_t rows_end = min(task.num_rows, block_rows_begin + kScoreRowsPerBlock);
  // Row r sees entries j <= cached_length + r.
  const int32_t rows_begin = max(block_rows_begin, tile_begin - task.cached_length);
  if (tile_begin >= entries || rows_begin >= rows_end) return;  // uniform across the block
  const int32_t* table = tables + task.table_offset;
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % kWarpSize;
  const int warp = tid / kWarpSize;
  const bool reduce_max = score_task.reduce_max != 0;

  const float* const keys = static_cast<const float*>(pool.keys);
  for (int i = tid; i < kEntryTile * head_dim; i += kTileThreads) {
    const int e = i / head_dim;
    const int32_t j = tile_begin + e;
    k_tile[e * (head_dim + 1) + i % head_dim] =
        j < entries ? keys[EntryOffset(table, pool.block_size, j) * head_dim + i % head_dim] : 0.0f;
  }
  if (tid < kEntryTile) {
    const int32_t j = tile_begin + tid;
    vote_tile[tid] = j < entries ? pool.log_votes[EntryOffset(table, pool.block_size, j)] : 0.0f;
  }

  const int32_t j = tile_begin + lane;
  const float* key = k_tile + lane * (head_dim + 1);
  const float* warp_queries = q_tile + warp * kVectorsPerWarp * head_dim;
  const int32_t vectors = (rows_end - rows_begin) * group;
  float fold = 0.0f;
  for (int32_t chunk = 0; chunk < vectors; chunk += kQueryTileVectors) {
    __syncthreads();  // keys and votes are in; the previous chunk's queries are no longer read
    for (int i = tid; i < kQueryTileVectors * head_dim; i += kTileThreads) {
      const int32_t vector = chunk + i / head_dim;
      const int64_t row = static_cast<int64_t>(task.q_first_row) + rows_begin + vector / group;
      const int32_t head = task.kv_head * group + vector % group;
      q_tile[i] = vector < vectors
                      ? q[row * q_cols + static_cast<int64_t>(head) * head_dim + i % head_dim]
                      : 0.0f;
    }
    if (tid < kQueryTileVectors) {
      const int32_t vector = chunk + tid;
      const int64_t row = static_cast<int64_t>(task.q_first_row) + rows_begin + vector / group;
      lse_tile[tid] = vector < vectors
                          ? lse[row * shape.num_heads + task.kv_head * group + vector % group]
                          : 0.0f;
    }
    __syncthreads();

    float dot[kVectorsPerWarp];
    TileDots(warp_queries, key, head_dim, dot);
#pragma unroll
    for (int i = 0; i < kVectorsPerWarp; ++i) {
      const int32_t vector = chunk + warp * kVectorsPerWarp + i;
      const int32_t row = rows_begin + vector / group;
      if (vector >= vectors || j > task.cached_length + row) continue;
      const float logit = __fadd_rn(__fmul_rn(dot[i], shape.scale), vote_tile[lane]);
      const float p = expf(logit - lse_tile[warp * kVectorsPerWarp + i]);
      fold = reduce_max ? fmaxf(fold, p) : fold + p;
    }
  }

  folds[warp * kEntryTile + lane] = fold;
  __syncthreads();
  if (warp != 0 || j >= entries) return;
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < kTileWarps; ++w) {
    const float f = folds[w * kEntryTile + lane];
    total = reduce_max ? fmaxf(total, f) : total + f;
  }
  if (total == 0.0f) return;
  if (reduce_max) {
    atomicMax(reinterpret_cast<int*>(score_task.scores + j), __float_as_int(total));
  } else {
    atomicAdd(score_task.scores + j, total);
  }
}

}  // namespace
}  // namespace kvd::kernels::cuda
