// prefill_attention.cu's launches on the CPU (see attention_launches.h).
#include "tests/unit/kernels/cuda_emulation/cuda_names.h"
// The device code, after the names it is written against.
#include "kernels/cuda/prefill_attention_kernels.cuh"
#include "tests/unit/kernels/cuda_emulation/attention_launches.h"

namespace kvd::kernels::cuda::emulation {
namespace {

template <int kDimsPerLane>
absl::Status Run(dim3 grid, const float* q, const KvPool& pool, const AttentionTask* tasks,
                 const int32_t* tables, const AttentionShape& shape, int64_t q_cols, float* out,
                 float* lse) {
  return Launch(PrefillAttentionKernel<kDimsPerLane>, grid, kTileThreads,
                SharedBytes(shape.head_dim), q, pool, tasks, tables, shape, q_cols, out, lse);
}

}  // namespace

absl::Status EmulatePrefillAttention(const float* q, const KvPool& pool, const AttentionTask* tasks,
                                     int32_t num_tasks, int32_t max_tiles, const int32_t* tables,
                                     const AttentionShape& shape, int64_t q_cols, float* out,
                                     float* lse) {
  if (num_tasks <= 0 || max_tiles <= 0) return absl::OkStatus();
  const dim3 grid(static_cast<unsigned>(num_tasks), static_cast<unsigned>(max_tiles));
  if (shape.head_dim <= 64) return Run<2>(grid, q, pool, tasks, tables, shape, q_cols, out, lse);
  if (shape.head_dim <= 128) return Run<4>(grid, q, pool, tasks, tables, shape, q_cols, out, lse);
  return Run<8>(grid, q, pool, tasks, tables, shape, q_cols, out, lse);
}

}  // namespace kvd::kernels::cuda::emulation
