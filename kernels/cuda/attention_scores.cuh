// Per-entry attention scores on the device (KVzip's, and the sums H2O-style compression and
// KeepKV read): each scored row's softmax probabilities, recomputed from its log-sum-exp, folded
// into its entries' scores by max or sum. Reference: the score folding of cpu/attention.cc.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/attention_plan.h"
#include "kernels/kv_layout.h"

namespace kvd::kernels::cuda {

// For every score task, every row r >= first_row and query head g of its kv group, and every
// entry j the row sees: p = exp(q·k_j * scale + log_vote_j - lse[r * num_heads + head]) folds
// into scores[j] (max or sum). `lse` comes from the attention launches over the same q and
// pool. `max_entry_tiles` and `max_row_blocks` are the most any task has (AttentionPlan).
// Every pointer is device memory; head_dim is a multiple of 4 and at most 256. Returns the
// error of preparing the launch.
[[nodiscard]] cudaError_t LaunchAttentionScores(const float* q, const KvPool& pool,
                                                const ScoreTask* tasks, int32_t num_tasks,
                                                int32_t max_entry_tiles, int32_t max_row_blocks,
                                                const int32_t* tables, const AttentionShape& shape,
                                                int64_t q_cols, const float* lse,
                                                cudaStream_t stream);

}  // namespace kvd::kernels::cuda
