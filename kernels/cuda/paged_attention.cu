// Paged GQA attention on the device, f32: paged_attention.cuh's kernel (ref. cpu/attention.cc).
#include "kernels/cuda/paged_attention.cuh"

#include <math_constants.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace kvd::kernels::cuda {
namespace {

constexpr int kWarpSize = 32;
constexpr unsigned kFullMask = 0xffffffffu;
// Warps per thread block; warp w takes entries w, w + kWarps, ... of its row.
constexpr int kWarps = 8;
constexpr int kThreads = kWarps * kWarpSize;
constexpr int32_t kMaxHeadDim = 8 * kWarpSize;
constexpr int32_t kMaxGridY = 65535;
constexpr int32_t kMaxGridZ = 65535;

// Butterfly sum: IEEE addition commutes, so every lane ends with the same bits, which keeps the
// logits (and the branches on them) warp-uniform.
__device__ __forceinline__ float WarpSum(float x) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    x += __shfl_xor_sync(kFullMask, x, offset);
  }
  return x;
}

// Pool offset of entry j of the head whose block table is `table`.
__device__ __forceinline__ int64_t EntryOffset(const int32_t* table, int32_t block_size,
                                               int32_t j) {
  return static_cast<int64_t>(table[j / block_size]) * block_size + j % block_size;
}

// One thread block per (task, row, query head of the task's kv head); rows stride by gridDim.y.
// Lane l of a warp owns dimensions l, l + 32, ... (kDimsPerLane of them, head_dim <= 32 *
// kDimsPerLane); the warp walks its entries one at a time, keeping an online softmax (running
// max m, Kahan-compensated sum of exp and weighted values rescaled whenever m rises). The warps'
// partial results merge through shared memory. Kahan matters: with plain float sums of ~16k
// terms per warp (128k entries) single output elements drifted ~1e-4 from the CPU's double sums
// in a host simulation, with Kahan ~5e-6. A second walk, only for rows that fold scores,
// recomputes each logit and folds exp(logit - max) / sum into scores[j].
template <int kDimsPerLane>
__global__ void __launch_bounds__(kThreads)
    PagedAttentionKernel(const float* q, KvPool pool, const AttentionTask* tasks,
                         const int32_t* tables, AttentionShape shape, int64_t q_cols, float* out) {
  constexpr int kSpan = kDimsPerLane * kWarpSize;
  __shared__ float warp_max[kWarps];
  __shared__ float warp_sum[kWarps];
  __shared__ float warp_acc[kWarps][kSpan];

  const AttentionTask task = tasks[blockIdx.x];
  const int32_t group = shape.num_heads / shape.num_kv_heads;
  const int32_t head = task.kv_head * group + static_cast<int32_t>(blockIdx.z);
  const int32_t head_dim = shape.head_dim;
  const int32_t block_size = pool.block_size;
  const int32_t* table = tables + task.table_offset;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const float neg_inf = -CUDART_INF_F;

  // The row loop's bounds are uniform across the block, so every thread reaches each barrier.
  for (int32_t row = static_cast<int32_t>(blockIdx.y); row < task.num_rows;
       row += static_cast<int32_t>(gridDim.y)) {
    const int32_t entries = task.cached_length + row + 1;
    const int64_t q_offset = (static_cast<int64_t>(task.q_first_row) + row) * q_cols +
                             static_cast<int64_t>(head) * head_dim;

    float q_reg[kDimsPerLane];
#pragma unroll
    for (int k = 0; k < kDimsPerLane; ++k) {
      const int d = lane + k * kWarpSize;
      q_reg[k] = d < head_dim ? q[q_offset + d] : 0.0f;
    }

    float m = neg_inf;
    float sum = 0.0f;
    float sum_comp = 0.0f;  // Kahan compensation: sum - sum_comp is the better estimate
    float acc[kDimsPerLane];
    float acc_comp[kDimsPerLane];
#pragma unroll
    for (int k = 0; k < kDimsPerLane; ++k) {
      acc[k] = 0.0f;
      acc_comp[k] = 0.0f;
    }

    for (int32_t j = warp; j < entries; j += kWarps) {
      const int64_t entry = EntryOffset(table, block_size, j);
      const float* key = pool.keys + entry * head_dim;
      const float* value = pool.values + entry * head_dim;
      // Issue the value loads with the key loads, before the dot product's shuffles.
      float k_reg[kDimsPerLane];
      float v_reg[kDimsPerLane];
#pragma unroll
      for (int k = 0; k < kDimsPerLane; ++k) {
        const int d = lane + k * kWarpSize;
        k_reg[k] = d < head_dim ? key[d] : 0.0f;
        v_reg[k] = d < head_dim ? value[d] : 0.0f;
      }
      const float log_vote = pool.log_votes[entry];
      float dot = 0.0f;
#pragma unroll
      for (int k = 0; k < kDimsPerLane; ++k) dot = fmaf(q_reg[k], k_reg[k], dot);
      dot = WarpSum(dot);
      const float logit = __fadd_rn(__fmul_rn(dot, shape.scale), log_vote);
      const float m_new = fmaxf(m, logit);
      if (m_new == neg_inf) continue;  // every logit so far is -inf: nothing to weigh yet
      const float alpha = expf(m - m_new);  // 1 while the max holds, 0 for the first entry
      const float w = expf(logit - m_new);
      m = m_new;
      sum *= alpha;
      sum_comp *= alpha;
      {
        const float y = w - sum_comp;
        const float t = sum + y;
        sum_comp = (t - sum) - y;
        sum = t;
      }
#pragma unroll
      for (int k = 0; k < kDimsPerLane; ++k) {
        acc[k] *= alpha;
        acc_comp[k] *= alpha;
        const float y = w * v_reg[k] - acc_comp[k];
        const float t = acc[k] + y;
        acc_comp[k] = (t - acc[k]) - y;
        acc[k] = t;
      }
    }

    if (lane == 0) {
      warp_max[warp] = m;
      warp_sum[warp] = sum - sum_comp;
    }
#pragma unroll
    for (int k = 0; k < kDimsPerLane; ++k) {
      warp_acc[warp][lane + k * kWarpSize] = acc[k] - acc_comp[k];
    }
    __syncthreads();

    // Every thread merges the warps' (max, sum) the same way, so all hold identical max/total.
    float max_logit = neg_inf;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) max_logit = fmaxf(max_logit, warp_max[w]);
    float factor[kWarps];
    float total = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      factor[w] = warp_max[w] == neg_inf ? 0.0f : expf(warp_max[w] - max_logit);
      total += factor[w] * warp_sum[w];
    }
    for (int d = static_cast<int>(threadIdx.x); d < head_dim; d += kThreads) {
      float value = 0.0f;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) value += factor[w] * warp_acc[w][d];
      out[q_offset + d] = value / total;
    }
    __syncthreads();  // the next row rewrites warp_max / warp_sum / warp_acc

    if (task.scores == nullptr || row < task.score_first_row) continue;
    for (int32_t j = warp; j < entries; j += kWarps) {
      const int64_t entry = EntryOffset(table, block_size, j);
      const float* key = pool.keys + entry * head_dim;
      float dot = 0.0f;
#pragma unroll
      for (int k = 0; k < kDimsPerLane; ++k) {
        const int d = lane + k * kWarpSize;
        if (d < head_dim) dot = fmaf(q_reg[k], key[d], dot);
      }
      dot = WarpSum(dot);
      if (lane != 0) continue;
      const float logit = __fadd_rn(__fmul_rn(dot, shape.scale), pool.log_votes[entry]);
      const float p = expf(logit - max_logit) / total;
      if (task.reduce_max != 0) {
        // Probabilities are >= 0 (and scores start at 0), where the int order of the bit
        // patterns is the float order.
        atomicMax(reinterpret_cast<int*>(task.scores + j), __float_as_int(p));
      } else {
        atomicAdd(task.scores + j, p);
      }
    }
  }
}

[[noreturn]] void ContractViolation(const char* what) {
  std::fprintf(stderr, "LaunchPagedAttention: %s\n", what);
  std::abort();
}

template <int kDimsPerLane>
void Launch(dim3 grid, const float* q, const KvPool& pool, const AttentionTask* tasks,
            const int32_t* tables, const AttentionShape& shape, int64_t q_cols, float* out,
            cudaStream_t stream) {
  PagedAttentionKernel<kDimsPerLane>
      <<<grid, kThreads, 0, stream>>>(q, pool, tasks, tables, shape, q_cols, out);
}

}  // namespace

void LaunchPagedAttention(const float* q, const KvPool& pool, const AttentionTask* tasks,
                          int32_t num_tasks, int32_t max_rows_per_task, const int32_t* tables,
                          const AttentionShape& shape, int64_t q_cols, float* out,
                          cudaStream_t stream) {
  if (num_tasks <= 0 || max_rows_per_task <= 0) return;
  if (shape.num_kv_heads <= 0 || shape.num_heads % shape.num_kv_heads != 0) {
    ContractViolation("num_heads must be a positive multiple of num_kv_heads");
  }
  const int32_t group = shape.num_heads / shape.num_kv_heads;
  if (group <= 0 || group > kMaxGridZ) ContractViolation("unsupported query group size");
  if (shape.head_dim <= 0 || shape.head_dim > kMaxHeadDim) {
    ContractViolation("head_dim must be in [1, 256]");
  }
  if (pool.block_size <= 0) ContractViolation("block_size must be positive");
  const dim3 grid(static_cast<unsigned>(num_tasks),
                  static_cast<unsigned>(std::min(max_rows_per_task, kMaxGridY)),
                  static_cast<unsigned>(group));
  if (shape.head_dim <= kWarpSize) {
    Launch<1>(grid, q, pool, tasks, tables, shape, q_cols, out, stream);
  } else if (shape.head_dim <= 2 * kWarpSize) {
    Launch<2>(grid, q, pool, tasks, tables, shape, q_cols, out, stream);
  } else if (shape.head_dim <= 4 * kWarpSize) {
    Launch<4>(grid, q, pool, tasks, tables, shape, q_cols, out, stream);
  } else {
    Launch<8>(grid, q, pool, tasks, tables, shape, q_cols, out, stream);
  }
}

}  // namespace kvd::kernels::cuda
