// Paged GQA prefill attention on the device (tasks of several new rows), f32, with log-votes:
// causal and tiled, flash-style, over the task's cached entries and its new rows. Reference:
// cpu/attention.cc.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/attention_plan.h"
#include "kernels/kv_layout.h"

namespace kvd::kernels::cuda {

// For every task, row and query head g of its group: out = softmax(q·k * scale + log_vote) · v
// over the entries the row sees, and, with `lse` non-null, lse[row * num_heads + head] = the log
// of the softmax's denominator. `max_tiles` is the most query tiles (kQueryTileVectors
// vectors) any task has. q and out are [rows, num_heads * head_dim]; head_dim is a multiple of
// 4 and at most 256. Every pointer is device memory. Returns the error of preparing the launch
// (the launch's own surfaces through cudaGetLastError).
[[nodiscard]] cudaError_t LaunchPrefillAttention(const float* q, const KvPool& pool,
                                                 const AttentionTask* tasks, int32_t num_tasks,
                                                 int32_t max_tiles, const int32_t* tables,
                                                 const AttentionShape& shape, int64_t q_cols,
                                                 float* out, float* lse, cudaStream_t stream);

}  // namespace kvd::kernels::cuda
