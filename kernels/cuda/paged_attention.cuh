// Paged GQA attention on the device, f32, with log-votes and optional per-entry score folding:
// the CUDA counterpart of kernels/cpu/attention.cc, which is its reference.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/kv_layout.h"

namespace kvd::kernels::cuda {

// The rows of one sequence at one kv head, as the host packs them for a launch.
struct AttentionTask {
  int32_t q_first_row = 0;    // the sequence's first row in q and out
  int32_t num_rows = 0;       // its new rows; row i sees cached_length + i + 1 entries
  int32_t kv_head = 0;
  int32_t cached_length = 0;  // entries before the new rows
  int64_t table_offset = 0;   // where the head's block table starts in the flat table array
  float* scores = nullptr;    // null: no scores; else [stride] for this kv head, device memory
  int32_t score_first_row = 0;  // rows from this one on fold their probabilities in
  int32_t reduce_max = 0;       // 1: ScoreReduce::kMax, 0: kSum
};

// For every task, row and query head g of the task's kv head (query head kv_head * G + g,
// G = num_heads / num_kv_heads): out = softmax(q·k * scale + log_vote) · v over the visible
// entries, and, when the task has scores, each entry's probability folded into scores[j]
// (max or sum). `tables` holds every task's block ids; q and out are [rows, num_heads *
// head_dim]. Every pointer, `tasks` and `tables` included, is device memory.
void LaunchPagedAttention(const float* q, const KvPool& pool, const AttentionTask* tasks,
                          int32_t num_tasks, int32_t max_rows_per_task, const int32_t* tables,
                          const AttentionShape& shape, int64_t q_cols, float* out,
                          cudaStream_t stream);

}  // namespace kvd::kernels::cuda
