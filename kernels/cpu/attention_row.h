// The inner step of CPU attention, one query row at one kv head: the logits of the group's
// query heads over the head's entries (with their log-votes), their softmax weights and the
// weighted sum of values, over a pool of f32 or bf16 keys and values (computed in f32). One kernel
// per instruction set, as for matmuls; the scalar one, which accumulates values in double, is the
// reference (tests/unit/kernels/attention_row_test.cc).
#pragma once

#include <cstdint>

#include "kernels/kv_layout.h"

namespace kvd::kernels::cpu {

struct AttentionRow {
  const KvPool* pool = nullptr;
  const int64_t* slots = nullptr;  // [entries]: the pool slot of each entry, in order
  int32_t entries = 0;
  int32_t group = 0;  // query heads of this kv head
  int32_t head_dim = 0;
  float scale = 0.0f;
  const float* queries = nullptr;  // group heads, head_dim floats each, one after the other
  float* out = nullptr;            // likewise
  // Outputs besides `out`: weights [group * entries], exp(logit − the row's max) per head and
  // entry, and totals [group], their sums (a probability is weight / total).
  float* weights = nullptr;
  double* totals = nullptr;
};

using AttentionRowKernel = void (*)(const AttentionRow&);

AttentionRowKernel ScalarAttentionRow();
// AVX2 with FMA: dot products and the value sum eight dimensions at a time, in f32.
AttentionRowKernel Avx2AttentionRow();
// AVX-512 (F, BW, DQ and VL, and VNNI, as the matmuls) with FMA: sixteen dimensions at a time,
// each key loaded once for up to four heads of the group.
AttentionRowKernel Avx512AttentionRow();

}  // namespace kvd::kernels::cpu
