// Paged GQA decode attention on the device (tasks of one new row), f32, with log-votes: the
// query heads of a kv group share each key and value read, and long caches split into
// partitions whose partial softmaxes a second kernel merges. Reference: cpu/attention.cc.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/attention_plan.h"
#include "kernels/kv_layout.h"

namespace kvd::kernels::cuda {

// Floats of partial results a decode launch with more than one partition needs, for its tasks'
// partitions together (AttentionPlan::decode_partial_partitions).
int64_t DecodePartialFloats(int64_t partial_partitions, const AttentionShape& shape);

// For every task and query head g of its group: out = softmax(q·k * scale + log_vote) · v over
// the task's cached_length + 1 entries, and, with `lse` non-null, lse[row * num_heads + head] =
// the log of the softmax's denominator. With partitions > 1, `partials` (DecodePartialFloats)
// holds each partition's result until the merge. q and out are [rows, num_heads * head_dim];
// head_dim is a multiple of 4 and at most 256. Every pointer is device memory.
void LaunchDecodeAttention(const float* q, const KvPool& pool, const AttentionTask* tasks,
                           int32_t num_tasks, const int32_t* tables, const AttentionShape& shape,
                           int64_t q_cols, int32_t partition, int32_t partitions, float* partials,
                           float* out, float* lse, cudaStream_t stream);

}  // namespace kvd::kernels::cuda
