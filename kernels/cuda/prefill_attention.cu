// Tiled paged GQA prefill attention, f32: prefill_attention.cuh's kernel (ref.
// cpu/attention.cc).
#include "kernels/cuda/prefill_attention.cuh"

#include <math_constants.h>

#include "kernels/cuda/prefill_attention_kernels.cuh"

namespace kvd::kernels::cuda {
namespace {

template <int kDimsPerLane>
cudaError_t Launch(dim3 grid, const float* q, const KvPool& pool, const AttentionTask* tasks,
                   const int32_t* tables, const AttentionShape& shape, int64_t q_cols, float* out,
                   float* lse, cudaStream_t stream) {
  const size_t bytes = SharedBytes(shape.head_dim);
  if (cudaError_t e = cudaFuncSetAttribute(PrefillAttentionKernel<kDimsPerLane>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(bytes));
      e != cudaSuccess) {
    return e;
  }
  PrefillAttentionKernel<kDimsPerLane>
      <<<grid, kTileThreads, bytes, stream>>>(q, pool, tasks, tables, shape, q_cols, out, lse);
  return cudaSuccess;
}

}  // namespace

cudaError_t LaunchPrefillAttention(const float* q, const KvPool& pool, const AttentionTask* tasks,
                                   int32_t num_tasks, int32_t max_tiles, const int32_t* tables,
                                   const AttentionShape& shape, int64_t q_cols, float* out,
                                   float* lse, cudaStream_t stream) {
  if (num_tasks <= 0 || max_tiles <= 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(num_tasks), static_cast<unsigned>(max_tiles));
  if (shape.head_dim <= 64)
    return Launch<2>(grid, q, pool, tasks, tables, shape, q_cols, out, lse, stream);
  if (shape.head_dim <= 128)
    return Launch<4>(grid, q, pool, tasks, tables, shape, q_cols, out, lse, stream);
  return Launch<8>(grid, q, pool, tasks, tables, shape, q_cols, out, lse, stream);
}

}  // namespace kvd::kernels::cuda
