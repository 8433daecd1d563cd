// Per-entry attention score folding, f32: attention_scores.cuh's kernel (ref. the score folding
// of cpu/attention.cc).
#include "kernels/cuda/attention_scores.cuh"

#include <math_constants.h>

#include "kernels/cuda/attention_scores_kernels.cuh"

namespace kvd::kernels::cuda {

cudaError_t LaunchAttentionScores(const float* q, const KvPool& pool, const ScoreTask* tasks,
                                  int32_t num_tasks, int32_t max_entry_tiles,
                                  int32_t max_row_blocks, const int32_t* tables,
                                  const AttentionShape& shape, int64_t q_cols, const float* lse,
                                  cudaStream_t stream) {
  if (num_tasks <= 0 || max_entry_tiles <= 0 || max_row_blocks <= 0) return cudaSuccess;
  const size_t bytes = SharedBytes(shape.head_dim);
  if (cudaError_t e =
          cudaFuncSetAttribute(AttentionScoresKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(bytes));
      e != cudaSuccess) {
    return e;
  }
  const dim3 grid(static_cast<unsigned>(num_tasks), static_cast<unsigned>(max_entry_tiles),
                  static_cast<unsigned>(max_row_blocks));
  AttentionScoresKernel<<<grid, kTileThreads, bytes, stream>>>(q, pool, tasks, tables, shape,
                                                               q_cols, lse);
  return cudaSuccess;
}

}  // namespace kvd::kernels::cuda
