// Attention of several consecutive query rows of one sequence at one kv head (a chunk of a
// prompt): each row's logits, softmax weights and weighted value sum as the row kernel
// (attention_row.h) computes them, with each block of keys transposed once for every head of
// every row, so that a logit is a run of multiply-adds without a horizontal sum. Row r sees the
// entries [0, first_entries + r): its own, the rows before it and the cache.
#pragma once

#include <cstdint>

#include "kernels/cpu/attention_row.h"
#include "kernels/kv_layout.h"

namespace kvd::kernels::cpu {

struct AttentionRows {
  const KvPool* pool = nullptr;
  const int64_t* slots = nullptr;  // [first_entries + rows - 1]: the pool slot of each entry
  int32_t first_entries = 0;       // entries row 0 sees, at least 1
  int32_t rows = 0;
  int32_t group = 0;  // query heads of this kv head
  int32_t head_dim = 0;
  float scale = 0.0f;
  // Row r's group heads from queries + r * row_stride (likewise out), head_dim floats each,
  // one after the other.
  const float* queries = nullptr;
  float* out = nullptr;
  int64_t row_stride = 0;
  // Head g of row r at weights + (r * group + g) * weight_stride and totals[r * group + g]: as
  // AttentionRow's weights and totals over the row's entries.
  float* weights = nullptr;   // [rows * group * weight_stride]
  int64_t weight_stride = 0;  // at least RowsWeightStride(first_entries + rows - 1)
  double* totals = nullptr;   // [rows * group]
};

// The weight stride for rows that see up to `entries` entries: whole vectors of sixteen.
inline int64_t RowsWeightStride(int32_t entries) { return (int64_t{entries} + 15) / 16 * 16; }

using AttentionRowsKernel = void (*)(const AttentionRows&);

// Each row by `row`, one after another (the reference, with ScalarAttentionRow()).
void RunRowByRow(const AttentionRows& a, AttentionRowKernel row);

// AVX-512 (F, BW, DQ and VL, and VNNI, as the matmuls) with FMA: keys transposed sixteen
// entries at a time, logits of up to eight heads' queries a pass, values sixteen dimensions a
// vector for four queries at a time.
AttentionRowsKernel Avx512AttentionRows();

// AMX-BF16 tiles the OS lets this process use, for a pool of bf16 keys and values: the queries and
// the softmax weights rounded to bf16 for the tiles' products (exact, summed in f32), as the bf16
// matmuls round their inputs; the logits, softmax, weights and totals in f32. A pool of f32 runs
// on Avx512AttentionRows().
AttentionRowsKernel AmxBf16AttentionRows();

}  // namespace kvd::kernels::cpu
