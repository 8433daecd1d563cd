// The CUDA backend's attention launches (decode_attention.cu, prefill_attention.cu,
// attention_scores.cu) run on the CPU: the same kernel code, chosen and launched the way those
// files do, over host memory. Arguments as the Launch* functions take them, without a stream.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/attention_plan.h"
#include "kernels/kv_layout.h"

namespace kvd::kernels::cuda::emulation {

[[nodiscard]] absl::Status EmulateDecodeAttention(const float* q, const KvPool& pool,
                                                  const AttentionTask* tasks, int32_t num_tasks,
                                                  const int32_t* tables,
                                                  const AttentionShape& shape, int64_t q_cols,
                                                  int32_t partition, int32_t partitions,
                                                  float* partials, float* out, float* lse);

[[nodiscard]] absl::Status EmulatePrefillAttention(const float* q, const KvPool& pool,
                                                   const AttentionTask* tasks, int32_t num_tasks,
                                                   int32_t max_tiles, const int32_t* tables,
                                                   const AttentionShape& shape, int64_t q_cols,
                                                   float* out, float* lse);

[[nodiscard]] absl::Status EmulateAttentionScores(const float* q, const KvPool& pool,
                                                  const ScoreTask* tasks, int32_t num_tasks,
                                                  int32_t max_entry_tiles, int32_t max_row_blocks,
                                                  const int32_t* tables,
                                                  const AttentionShape& shape, int64_t q_cols,
                                                  const float* lse);

}  // namespace kvd::kernels::cuda::emulation
