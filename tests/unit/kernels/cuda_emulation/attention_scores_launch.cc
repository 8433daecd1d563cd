// attention_scores.cu's launch on the CPU (see attention_launches.h).
#include "tests/unit/kernels/cuda_emulation/cuda_names.h"
// The device code, after the names it is written against.
#include "kernels/cuda/attention_scores_kernels.cuh"
#include "tests/unit/kernels/cuda_emulation/attention_launches.h"

namespace kvd::kernels::cuda::emulation {

absl::Status EmulateAttentionScores(const float* q, const KvPool& pool, const ScoreTask* tasks,
                                    int32_t num_tasks, int32_t max_entry_tiles,
                                    int32_t max_row_blocks, const int32_t* tables,
                                    const AttentionShape& shape, int64_t q_cols, const float* lse) {
  if (num_tasks <= 0 || max_entry_tiles <= 0 || max_row_blocks <= 0) return absl::OkStatus();
  const dim3 grid(static_cast<unsigned>(num_tasks), static_cast<unsigned>(max_entry_tiles),
                  static_cast<unsigned>(max_row_blocks));
  return Launch(AttentionScoresKernel, grid, kTileThreads, SharedBytes(shape.head_dim), q, pool,
                tasks, tables, shape, q_cols, lse);
}

}  // namespace kvd::kernels::cuda::emulation
