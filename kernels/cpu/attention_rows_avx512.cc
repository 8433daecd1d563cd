// The AVX-512 rows kernel (attention_rows.h), in f32 over f32 or bf16 keys and values:
// - logits sixteen entries at a time: the block's keys are transposed into dimension-major
//   order once (avx512_vectors.h's Transpose16), then each query of every row and head sums its
//   products with them lane by lane, up to eight queries a pass;
// - attention_row_steps.h's softmax per query over the entries its row sees, its weights past
//   them zero;
// - the weighted value sum four queries at a time, up to 64 dimensions a pass.
#include <algorithm>
#include <vector>

#include "kernels/cpu/attention_avx512.h"
#include "kernels/cpu/attention_row_steps.h"
#include "kernels/cpu/attention_rows.h"
#include "kernels/cpu/avx512_vectors.h"

namespace kvd::kernels::cpu {
namespace {

constexpr int32_t kBlock = 16;  // entries whose keys are transposed together
// How many entries ahead of the one it adds the value sum asks for that entry's values.
constexpr int32_t kValuesAhead = 32;

using attention_avx512::Elements;

// A task's pool and rows, its queries numbered q = r * group + g (row r, head g).
template <class T>
struct Rows {
  const AttentionRows& a;
  const T* keys = static_cast<const T*>(a.pool->keys);
  const T* values = static_cast<const T*>(a.pool->values);
  int32_t Queries() const { return a.rows * a.group; }
  // Entries query q sees.
  int32_t Entries(int32_t q) const { return a.first_entries + q / a.group; }
  int64_t HeadOffset(int32_t q) const {
    return (q / a.group) * a.row_stride + int64_t{q % a.group} * a.head_dim;
  }
  float* Weights(int32_t q) const { return a.weights + q * a.weight_stride; }
};

// transposed[d * 16 + e] = dimension d of the key of entry first + e, for the `count` entries
// of the block from `first` (the other lanes zero) and every dimension.
template <class T>
KVD_AVX512 void TransposeKeys(const Rows<T>& rows, int32_t first, int32_t count,
                              float* transposed) {
  const int32_t head_dim = rows.a.head_dim;
  for (int32_t d = 0; d < head_dim; d += 16) {
    const __mmask16 mask = TailMask(head_dim - d);
    __m512 v[16];
#pragma GCC unroll 16
    for (int e = 0; e < 16; ++e) {
      v[e] = e < count ? Elements<T>::template Load<true>(
                             rows.keys, rows.a.slots[first + e] * head_dim + d, mask)
                       : _mm512_setzero_ps();
    }
    Transpose16(v);
    const int32_t dims = std::min(16, head_dim - d);
    for (int32_t i = 0; i < dims; ++i) _mm512_storeu_ps(transposed + (d + i) * 16, v[i]);
  }
}

// The logits of queries [q, q + kQueries) over the block of sixteen entries from `first`,
// written to their weights at `first`: q · k · scale + log-vote (past the last entry, lanes the
// softmax never reads).
template <class T, int kQueries>
KVD_AVX512 void LogitPass(const Rows<T>& rows, int32_t q, int32_t first, const float* transposed,
                          __m512 log_votes) {
  const AttentionRows& a = rows.a;
  const float* queries[kQueries];
#pragma GCC unroll 8
  for (int i = 0; i < kQueries; ++i) queries[i] = a.queries + rows.HeadOffset(q + i);
  __m512 sums[kQueries];
#pragma GCC unroll 8
  for (int i = 0; i < kQueries; ++i) sums[i] = _mm512_setzero_ps();
  for (int32_t d = 0; d < a.head_dim; ++d) {
    const __m512 keys = _mm512_loadu_ps(transposed + d * 16);
#pragma GCC unroll 8
    for (int i = 0; i < kQueries; ++i) {
      sums[i] = _mm512_fmadd_ps(_mm512_set1_ps(queries[i][d]), keys, sums[i]);
    }
  }
  const __m512 scale = _mm512_set1_ps(a.scale);
#pragma GCC unroll 8
  for (int i = 0; i < kQueries; ++i) {
    _mm512_storeu_ps(rows.Weights(q + i) + first, _mm512_fmadd_ps(sums[i], scale, log_votes));
  }
}

// Every query's logits over every entry the last row sees.
template <class T>
KVD_AVX512 void Logits(const Rows<T>& rows) {
  const AttentionRows& a = rows.a;
  const int32_t entries = a.first_entries + a.rows - 1;
  const int32_t queries = rows.Queries();
  thread_local std::vector<float> transposed_keys;
  transposed_keys.resize(static_cast<size_t>(a.head_dim) * kBlock);
  float* const transposed = transposed_keys.data();
  for (int32_t first = 0; first < entries; first += kBlock) {
    const int32_t count = std::min(kBlock, entries - first);
    TransposeKeys(rows, first, count, transposed);
    alignas(64) float log_votes[kBlock] = {};
    for (int32_t e = 0; e < count; ++e) log_votes[e] = a.pool->log_votes[a.slots[first + e]];
    const __m512 log_vote_vector = _mm512_load_ps(log_votes);
    int32_t q = 0;
    for (; q + 8 <= queries; q += 8) LogitPass<T, 8>(rows, q, first, transposed, log_vote_vector);
    for (; q + 4 <= queries; q += 4) LogitPass<T, 4>(rows, q, first, transposed, log_vote_vector);
    for (; q < queries; ++q) LogitPass<T, 1>(rows, q, first, transposed, log_vote_vector);
  }
}

// out[q] = Σ_e weights[q][e] · value_e / totals[q] over the entries the queries [q, q + kQueries)
// see, for kVectors × 16 dimensions from `dim`, the last vector's under `last_mask`.
template <class T, int kQueries, int kVectors>
KVD_AVX512 void ValuePass(const Rows<T>& rows, int32_t q, int32_t dim, __mmask16 last_mask) {
  const AttentionRows& a = rows.a;
  const int64_t head_dim = a.head_dim;
  __mmask16 masks[kVectors];
  attention_avx512::PassMasks(last_mask, masks);
  const float* weights[kQueries];
  __m512 sums[kQueries][kVectors];
#pragma GCC unroll 4
  for (int i = 0; i < kQueries; ++i) {
    weights[i] = rows.Weights(q + i);
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) sums[i][v] = _mm512_setzero_ps();
  }
  // The queries are in row order, so the last sees the most entries.
  const int32_t entries = rows.Entries(q + kQueries - 1);
  const T* const values = rows.values + dim;
  for (int32_t e = 0; e < entries; ++e) {
    if (e + kValuesAhead < entries) {
      attention_avx512::PrefetchPass<T, kVectors>(values + a.slots[e + kValuesAhead] * head_dim);
    }
    attention_avx512::AddWeightedValue(values + a.slots[e] * head_dim, masks, weights, e, sums);
  }
#pragma GCC unroll 4
  for (int i = 0; i < kQueries; ++i) {
    const __m512 inverse = _mm512_set1_ps(static_cast<float>(1.0 / a.totals[q + i]));
    float* out = a.out + rows.HeadOffset(q + i) + dim;
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      _mm512_mask_storeu_ps(out + 16 * v, masks[v], _mm512_mul_ps(sums[i][v], inverse));
    }
  }
}

// Every dimension of queries [q, q + kQueries): passes of 64 dimensions, then of 32, then of 16,
// the last under a mask.
template <class T, int kQueries>
KVD_AVX512 void Values(const Rows<T>& rows, int32_t q) {
  const int32_t head_dim = rows.a.head_dim;
  int32_t d = 0;
  for (; d + 64 <= head_dim; d += 64) ValuePass<T, kQueries, 4>(rows, q, d, 0xffff);
  if (d + 32 <= head_dim) {
    ValuePass<T, kQueries, 2>(rows, q, d, 0xffff);
    d += 32;
  }
  for (; d < head_dim; d += 16) ValuePass<T, kQueries, 1>(rows, q, d, TailMask(head_dim - d));
}

template <class T>
KVD_AVX512 void RunOn(const AttentionRows& a) {
  const Rows<T> rows{a};
  Logits(rows);
  const int32_t queries = rows.Queries();
  for (int32_t q = 0; q < queries; ++q) {
    float* weights = rows.Weights(q);
    const int32_t entries = rows.Entries(q);
    a.totals[q] = attention_steps::Softmax(weights, entries);
    // Past its entries a query's weights are zero, so that a value pass over more adds nothing.
    std::fill(weights + entries, weights + a.first_entries + a.rows - 1, 0.0f);
  }
  int32_t q = 0;
  for (; q + 4 <= queries; q += 4) Values<T, 4>(rows, q);
  for (; q < queries; ++q) Values<T, 1>(rows, q);
}

void Run(const AttentionRows& a) {
  if (a.pool->dtype == DType::kBF16) {
    RunOn<uint16_t>(a);
  } else {
    RunOn<float>(a);
  }
}

}  // namespace

AttentionRowsKernel Avx512AttentionRows() { return Run; }

}  // namespace kvd::kernels::cpu
