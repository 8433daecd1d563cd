// The AVX-512 attention row (attention_row.h), in f32 over f32 or bf16 keys and values:
// - logits four entries by up to four heads at a time: each key vector is loaded (and a bf16
//   one widened) once for the heads, up to sixteen accumulators add side by side, and
//   transpose-adds sum them four at a time (avx512_vectors.h's HorizontalSums);
// - the weighted value sum over blocks of entries that stay in L1, sixteen dimensions a vector,
//   with up to four heads' accumulators in registers;
// - the softmax and the order of the steps are attention_row_steps.h's.
// Head sizes that are not a multiple of sixteen end under a mask.
#include <algorithm>

#include "kernels/cpu/attention_avx512.h"
#include "kernels/cpu/attention_row.h"
#include "kernels/cpu/attention_row_steps.h"
#include "kernels/cpu/avx512_vectors.h"

namespace kvd::kernels::cpu {
namespace {

using attention_steps::kValueBlock;
using attention_steps::Row;

using attention_avx512::Elements;

// weights[g][j + e] = q_g · k_{j+e} · scale + log_vote_{j+e} for heads [first, first + kHeads)
// and entries e < kEntries.
template <class T, int kHeads, int kEntries>
KVD_AVX512 void LogitTile(const Row<T>& row, int32_t first, int32_t j) {
  const AttentionRow& a = row.a;
  const T* keys[kEntries];
  float log_votes[kEntries];
#pragma GCC unroll 4
  for (int e = 0; e < kEntries; ++e) {
    keys[e] = row.Key(j + e);
    log_votes[e] = a.pool->log_votes[a.slots[j + e]];
  }
  __m512 sums[kHeads][kEntries];
#pragma GCC unroll 4
  for (int h = 0; h < kHeads; ++h) {
#pragma GCC unroll 4
    for (int e = 0; e < kEntries; ++e) sums[h][e] = _mm512_setzero_ps();
  }
  for (int32_t d = 0; d < a.head_dim; d += 16) {
    const __mmask16 mask = TailMask(a.head_dim - d);
    __m512 k[kEntries];
#pragma GCC unroll 4
    for (int e = 0; e < kEntries; ++e) k[e] = Elements<T>::template Load<true>(keys[e], d, mask);
#pragma GCC unroll 4
    for (int h = 0; h < kHeads; ++h) {
      const __m512 q = _mm512_maskz_loadu_ps(mask, a.queries + int64_t{first + h} * a.head_dim + d);
#pragma GCC unroll 4
      for (int e = 0; e < kEntries; ++e) sums[h][e] = _mm512_fmadd_ps(q, k[e], sums[h][e]);
    }
  }
  float dots[kHeads][kEntries];
  HorizontalSums(sums, dots);
#pragma GCC unroll 4
  for (int h = 0; h < kHeads; ++h) {
    float* weights = row.Weights(first + h) + j;
#pragma GCC unroll 4
    for (int e = 0; e < kEntries; ++e) {
      weights[e] = dots[h][e] * a.scale + log_votes[e];
    }
  }
}

// Every head's logits of entries [j, j + kEntries): four heads at a time, then two, then one.
template <class T, int kEntries>
KVD_AVX512 void LogitTiles(const Row<T>& row, int32_t j) {
  const int32_t group = row.a.group;
  int32_t g = 0;
  for (; g + 4 <= group; g += 4) LogitTile<T, 4, kEntries>(row, g, j);
  for (; g + 2 <= group; g += 2) LogitTile<T, 2, kEntries>(row, g, j);
  for (; g < group; ++g) LogitTile<T, 1, kEntries>(row, g, j);
}

// out[g][d] += Σ_j weights[g][j] · value_j[d] over entries [begin, end), for kHeads heads from
// `first_head` and kVectors × 16 dimensions from `dim`, the last vector's under `last_mask`.
template <class T, int kHeads, int kVectors>
KVD_AVX512 void AccumulateValues(const Row<T>& row, int32_t first_head, int32_t dim,
                                 __mmask16 last_mask, int32_t begin, int32_t end) {
  const AttentionRow& a = row.a;
  const T* const values = row.values + dim;
  const int64_t* const slots = a.slots;
  const int64_t head_dim = a.head_dim;
  __mmask16 masks[kVectors];
  attention_avx512::PassMasks(last_mask, masks);
  const float* weights[kHeads];
  float* out[kHeads];
  __m512 sums[kHeads][kVectors];
#pragma GCC unroll 4
  for (int h = 0; h < kHeads; ++h) {
    weights[h] = row.Weights(first_head + h);
    out[h] = a.out + (first_head + h) * head_dim + dim;
#pragma GCC unroll 8
    for (int v = 0; v < kVectors; ++v)
      sums[h][v] = _mm512_maskz_loadu_ps(masks[v], out[h] + 16 * v);
  }
  // Each pass over the block asks for its dimensions of the next block's values, as the AVX2
  // kernel does.
  const int32_t prefetch_end = std::min(end, a.entries - kValueBlock);
  for (int32_t j = begin; j < end; ++j) {
    if (j < prefetch_end) {
      attention_avx512::PrefetchPass<T, kVectors>(values + slots[j + kValueBlock] * head_dim);
    }
    attention_avx512::AddWeightedValue(values + slots[j] * head_dim, masks, weights, j, sums);
  }
#pragma GCC unroll 4
  for (int h = 0; h < kHeads; ++h) {
#pragma GCC unroll 8
    for (int v = 0; v < kVectors; ++v) _mm512_mask_storeu_ps(out[h] + 16 * v, masks[v], sums[h][v]);
  }
}

// Every dimension of kHeads heads from `first_head` over entries [begin, end): passes of 64
// dimensions (up to sixteen accumulators), then of 32, then of 16, the last under a mask.
template <class T, int kHeads>
KVD_AVX512 void AccumulateHeads(const Row<T>& row, int32_t first_head, int32_t begin, int32_t end) {
  const int32_t head_dim = row.a.head_dim;
  int32_t d = 0;
  for (; d + 64 <= head_dim; d += 64) {
    AccumulateValues<T, kHeads, 4>(row, first_head, d, 0xffff, begin, end);
  }
  if (d + 32 <= head_dim) {
    AccumulateValues<T, kHeads, 2>(row, first_head, d, 0xffff, begin, end);
    d += 32;
  }
  for (; d < head_dim; d += 16) {
    AccumulateValues<T, kHeads, 1>(row, first_head, d, TailMask(head_dim - d), begin, end);
  }
}

// The AVX-512 steps of attention_steps::Run.
struct Avx512Steps {
  static constexpr int32_t kEntries = 4;

  template <class T>
  KVD_AVX512 static void Logits(const Row<T>& row) {
    const int32_t entries = row.a.entries;
    int32_t j = 0;
    for (; j + kEntries <= entries; j += kEntries) {
      attention_steps::PrefetchKeysAhead(row, j, kEntries);
      LogitTiles<T, kEntries>(row, j);
    }
    for (; j < entries; ++j) LogitTiles<T, 1>(row, j);
  }

  template <class T, int kHeads>
  KVD_AVX512 static void AccumulateHeads(const Row<T>& row, int32_t first_head, int32_t begin,
                                         int32_t end) {
    cpu::AccumulateHeads<T, kHeads>(row, first_head, begin, end);
  }
};

}  // namespace

AttentionRowKernel Avx512AttentionRow() { return attention_steps::RunOnPool<Avx512Steps>; }

}  // namespace kvd::kernels::cpu
