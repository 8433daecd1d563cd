// Paged GQA attention with per-entry log-votes (the CPU backend's), over f32 or bf16 keys and
// values. A prompt's rows run a chunk at a time on the rows kernel (attention_rows.h) where the
// CPU has one, else, as a decode step's row, on the fastest attention row kernel
// (attention_row.h).
#pragma once

#include <span>

#include "kernels/cpu/thread_pool.h"
#include "kernels/kv_layout.h"
#include "kernels/tensor.h"

namespace kvd::kernels::cpu {

void PagedAttention(const Tensor& q, const KvPool& pool, std::span<const SequenceKvRef> sequences,
                    const AttentionShape& shape, Tensor out, ThreadPool& threads);

}  // namespace kvd::kernels::cpu
