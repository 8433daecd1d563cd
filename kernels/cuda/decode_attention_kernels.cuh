// Device code of the paged GQA decode attention that decode_attention.cu launches: the decode
// kernel, the partial-result layout and the kernel merging partitions. Written against CUDA's
// names without including them (see attention_device.cuh), so that the CPU tests can run it.
#pragma once

#include <cstdint>

#include "kernels/cuda/attention_device.cuh"
#include "kernels/cuda/attention_plan.h"
#include "kernels/kv_layout.h"

namespace kvd::kernels::cuda {
// Internal linkage: a program holds this code once, nvcc's build (decode_attention.cu) or the
// CPU emulation's, never both under one name.
namespace {

constexpr int kMergeThreads = 128;

// Partial results are records of head_dim + 2 floats, one per (partition, head of the group),
// a task's partitions from its first_partial on: the partition's max logit, its sum of
// exp(logit - max), and its exp-weighted value sum.
__device__ __forceinline__ float* PartialRecord(float* partials, const AttentionTask& task,
                                                int32_t partition, int32_t group, int32_t head,
                                                int32_t head_dim) {
  const int64_t record = (task.first_partial + partition) * group + head;
  return partials + record * (head_dim + 2);
}

// One thread block per (task, partition, chunk of kHeads query heads of the group). A
// walker of kLanes lanes (kLanes * 4 * kVecs >= head_dim dimensions, one float4 per lane and
// vector) takes one entry at a time, so a warp holds 32 / kLanes entries in flight; each key and
// value it loads serves every query head of the chunk. Each walker keeps an online softmax per
// head (max m, sum of exp, weighted value sum, rescaled whenever m rises) over its share of the
// partition, at most kMaxPartition / walkers entries, and the walkers merge through shared
// memory. A task with one partition writes its output directly; otherwise the partition's
// record goes to `partials` for MergePartitionsKernel.
template <int kLanes, int kVecs, int kHeads>
__global__ void __launch_bounds__((kLanes * 4 * kVecs <= 128 ? 8 : 4) * kWarpSize)
    DecodeAttentionKernel(const float* q, KvPool pool, const AttentionTask* tasks,
                          const int32_t* tables, AttentionShape shape, int64_t q_cols,
                          int32_t partition, int32_t partitions, float* partials, float* out,
                          float* lse) {
  constexpr int kDims = kLanes * 4 * kVecs;
  constexpr int kWarps = kDims <= 128 ? 8 : 4;
  constexpr int kWalkersPerWarp = kWarpSize / kLanes;
  constexpr int kWalkers = kWarps * kWalkersPerWarp;
  __shared__ float walker_max[kWalkers][kHeads];
  __shared__ float walker_sum[kWalkers][kHeads];
  __shared__ __align__(16) float walker_acc[kWalkers][kHeads][kDims];

  const AttentionTask task = tasks[blockIdx.x];
  const int32_t entries = task.cached_length + 1;
  const int32_t begin = static_cast<int32_t>(blockIdx.y) * partition;
  if (begin >= entries) return;  // uniform across the block
  const int32_t end = min(entries, begin + partition);
  const int32_t group = shape.num_heads / shape.num_kv_heads;
  const int32_t head_offset = static_cast<int32_t>(blockIdx.z) * kHeads;  // within the group
  const int32_t heads = min(kHeads, group - head_offset);
  const int32_t first_head = task.kv_head * group + head_offset;
  const int32_t head_dim = shape.head_dim;
  const int32_t* table = tables + task.table_offset;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int walker_lane = lane % kLanes;
  const int walker = warp * kWalkersPerWarp + lane / kLanes;
  const float neg_inf = -CUDART_INF_F;

  // Dimensions 4 * (walker_lane + v * kLanes) .. + 3 of each vector belong to this lane.
  const float* q_row = q + static_cast<int64_t>(task.q_first_row) * q_cols +
                       static_cast<int64_t>(first_head) * head_dim;
  float4 q_reg[kHeads][kVecs];
#pragma unroll
  for (int h = 0; h < kHeads; ++h) {
#pragma unroll
    for (int v = 0; v < kVecs; ++v) {
      const int d = 4 * (walker_lane + v * kLanes);
      q_reg[h][v] = h < heads && d < head_dim
                        ? *reinterpret_cast<const float4*>(q_row + h * head_dim + d)
                        : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
  }

  float m[kHeads], sum[kHeads];
  float4 acc[kHeads][kVecs];
#pragma unroll
  for (int h = 0; h < kHeads; ++h) {
    m[h] = neg_inf;
    sum[h] = 0.0f;
#pragma unroll
    for (int v = 0; v < kVecs; ++v) acc[h][v] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }

  // Every lane runs the same iterations (the shuffles need the whole warp); a walker past the
  // end computes with zeros and a -inf logit, which changes nothing.
  for (int32_t base = begin + warp * kWalkersPerWarp; base < end; base += kWalkers) {
    const int32_t j = base + lane / kLanes;
    const bool valid = j < end;
    float4 k_reg[kVecs], v_reg[kVecs];
    float log_vote = 0.0f;
    if (valid) {
      const int64_t entry = EntryOffset(table, pool.block_size, j);
      const float* key = static_cast<const float*>(pool.keys) + entry * head_dim;
      const float* value = static_cast<const float*>(pool.values) + entry * head_dim;
#pragma unroll
      for (int v = 0; v < kVecs; ++v) {
        const int d = 4 * (walker_lane + v * kLanes);
        const bool inside = d < head_dim;
        k_reg[v] = inside ? *reinterpret_cast<const float4*>(key + d)
                          : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        v_reg[v] = inside ? *reinterpret_cast<const float4*>(value + d)
                          : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      }
      log_vote = pool.log_votes[entry];
    } else {
#pragma unroll
      for (int v = 0; v < kVecs; ++v) {
        k_reg[v] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        v_reg[v] = k_reg[v];
      }
    }
    float logit[kHeads];
#pragma unroll
    for (int h = 0; h < kHeads; ++h) {
      float dot = 0.0f;
#pragma unroll
      for (int v = 0; v < kVecs; ++v) dot = Dot4(q_reg[h][v], k_reg[v], dot);
      dot = GroupSum<kLanes>(dot);
      logit[h] = valid ? __fadd_rn(__fmul_rn(dot, shape.scale), log_vote) : neg_inf;
    }
#pragma unroll
    for (int h = 0; h < kHeads; ++h) {
      const float m_new = fmaxf(m[h], logit[h]);
      if (m_new == neg_inf) continue;          // every logit so far is -inf: nothing to weigh yet
      const float alpha = expf(m[h] - m_new);  // 1 while the max holds, 0 for the first entry
      const float w = expf(logit[h] - m_new);
      m[h] = m_new;
      sum[h] = fmaf(sum[h], alpha, w);
#pragma unroll
      for (int v = 0; v < kVecs; ++v) {
        acc[h][v].x = fmaf(acc[h][v].x, alpha, w * v_reg[v].x);
        acc[h][v].y = fmaf(acc[h][v].y, alpha, w * v_reg[v].y);
        acc[h][v].z = fmaf(acc[h][v].z, alpha, w * v_reg[v].z);
        acc[h][v].w = fmaf(acc[h][v].w, alpha, w * v_reg[v].w);
      }
    }
  }

#pragma unroll
  for (int h = 0; h < kHeads; ++h) {
    if (walker_lane == 0) {
      walker_max[walker][h] = m[h];
      walker_sum[walker][h] = sum[h];
    }
#pragma unroll
    for (int v = 0; v < kVecs; ++v) {
      const int d = 4 * (walker_lane + v * kLanes);
      *reinterpret_cast<float4*>(&walker_acc[walker][h][d]) = acc[h][v];
    }
  }
  __syncthreads();

  const int32_t row = task.q_first_row;
  for (int32_t i = static_cast<int32_t>(threadIdx.x); i < heads * head_dim;
       i += static_cast<int32_t>(blockDim.x)) {
    const int h = i / head_dim;
    const int d = i % head_dim;
    float max_logit = neg_inf;
#pragma unroll
    for (int w = 0; w < kWalkers; ++w) max_logit = fmaxf(max_logit, walker_max[w][h]);
    float total = 0.0f, value = 0.0f;
#pragma unroll
    for (int w = 0; w < kWalkers; ++w) {
      const float factor = walker_max[w][h] == neg_inf ? 0.0f : expf(walker_max[w][h] - max_logit);
      total = fmaf(factor, walker_sum[w][h], total);
      value = fmaf(factor, walker_acc[w][h][d], value);
    }
    if (partitions == 1) {
      out[static_cast<int64_t>(row) * q_cols + static_cast<int64_t>(first_head + h) * head_dim +
          d] = value / total;
      if (lse != nullptr && d == 0) {
        lse[static_cast<int64_t>(row) * shape.num_heads + first_head + h] = max_logit + logf(total);
      }
    } else {
      float* record = PartialRecord(partials, task, static_cast<int32_t>(blockIdx.y), group,
                                    head_offset + h, head_dim);
      if (d == 0) {
        record[0] = max_logit;
        record[1] = total;
      }
      record[2 + d] = value;
    }
  }
}

// One thread block per (task, query head of the group): merges the task's partitions' records
// into the output (and the log-sum-exp). Partitions past the task's entries were never written.
__global__ void __launch_bounds__(kMergeThreads)
    MergePartitionsKernel(const AttentionTask* tasks, const float* partials, int32_t partition,
                          int32_t partitions, AttentionShape shape, int64_t q_cols, float* out,
                          float* lse) {
  const AttentionTask task = tasks[blockIdx.x];
  const int32_t group = shape.num_heads / shape.num_kv_heads;
  const int32_t head_in_group = static_cast<int32_t>(blockIdx.y);
  const int32_t head = task.kv_head * group + head_in_group;
  const int32_t head_dim = shape.head_dim;
  const int32_t used = (task.cached_length + partition) / partition;  // of cached_length + 1
  const float neg_inf = -CUDART_INF_F;
  auto record = [&](int32_t p) {
    return PartialRecord(const_cast<float*>(partials), task, p, group, head_in_group, head_dim);
  };
  float max_logit = neg_inf;
  for (int32_t p = 0; p < used; ++p) max_logit = fmaxf(max_logit, record(p)[0]);
  float total = 0.0f;
  for (int32_t p = 0; p < used; ++p) {
    const float* r = record(p);
    if (r[0] != neg_inf) total = fmaf(expf(r[0] - max_logit), r[1], total);
  }
  const int64_t out_offset =
      static_cast<int64_t>(task.q_first_row) * q_cols + static_cast<int64_t>(head) * head_dim;
  for (int32_t d = static_cast<int32_t>(threadIdx.x); d < head_dim;
       d += static_cast<int32_t>(blockDim.x)) {
    float value = 0.0f;
    for (int32_t p = 0; p < used; ++p) {
      const float* r = record(p);
      if (r[0] != neg_inf) value = fmaf(expf(r[0] - max_logit), r[2 + d], value);
    }
    out[out_offset + d] = value / total;
  }
  if (lse != nullptr && threadIdx.x == 0) {
    lse[static_cast<int64_t>(task.q_first_row) * shape.num_heads + head] = max_logit + logf(total);
  }
}

}  // namespace
}  // namespace kvd::kernels::cuda
