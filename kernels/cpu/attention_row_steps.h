// The parts of the vector attention rows (attention_row_avx2.cc, attention_row_avx512.cc) that
// do not depend on the vector width: a row's view of the pool, the prefetch of entries ahead,
// the softmax on AVX2 (which the rows kernel, attention_rows_avx512.cc, runs too), and the order
// of the steps. Include only from files compiled function by function for AVX2 or more
// (attribute target).
#pragma once

#include <algorithm>
#include <cmath>

#include "kernels/cpu/attention_row.h"
#include "kernels/cpu/isa_targets.h"
#include "kernels/cpu/vector_exp_avx2.h"

namespace kvd::kernels::cpu::attention_steps {

// Entries whose values one pass of the value sum keeps in L1 (32 × 256 dims × 4 B = 32 KiB at
// the largest head).
inline constexpr int32_t kValueBlock = 32;
// How far ahead of the entries whose logits it computes the logit loop prefetches keys.
inline constexpr int32_t kKeysAhead = 32;

inline float ToFloat(float x) { return x; }
inline float ToFloat(uint16_t bf16) { return BF16ToFloat(bf16); }

// One row's view of the pool, whose keys and values are of type T (float, or uint16_t for bf16).
template <class T>
struct Row {
  const AttentionRow& a;
  const T* keys = static_cast<const T*>(a.pool->keys);
  const T* values = static_cast<const T*>(a.pool->values);
  const T* Key(int32_t j) const { return keys + a.slots[j] * a.head_dim; }
  const T* Value(int32_t j) const { return values + a.slots[j] * a.head_dim; }
  float* Weights(int32_t g) const { return a.weights + static_cast<int64_t>(g) * a.entries; }
};

// Asks for every cache line of the keys or values (`vectors`) of entries [begin, end) ahead of
// their use: an entry's blocks lie anywhere in the pool, so the hardware's stream prefetch
// loses the stream at every block. Always inlined: GCC 12 took a function that only prefetches
// for one without effects and dropped a call to it that it had not inlined (into the AVX-512
// kernel, whose target differs).
template <class T>
__attribute__((always_inline)) inline void Prefetch(const T* vectors, const AttentionRow& a,
                                                    int32_t begin, int32_t end) {
  for (int32_t j = begin; j < end; ++j) {
    const char* vector = reinterpret_cast<const char*>(vectors + a.slots[j] * a.head_dim);
    for (size_t line = 0; line < sizeof(T) * a.head_dim; line += 64) {
      _mm_prefetch(vector + line, _MM_HINT_T0);
    }
  }
}

// Asks for the keys and the log-vote of the entries kKeysAhead past [j, j + count).
template <class T>
__attribute__((always_inline)) inline void PrefetchKeysAhead(const Row<T>& row, int32_t j,
                                                             int32_t count) {
  const AttentionRow& a = row.a;
  if (j + kKeysAhead >= a.entries) return;
  Prefetch(row.keys, a, j + kKeysAhead, std::min(a.entries, j + kKeysAhead + count));
  _mm_prefetch(reinterpret_cast<const char*>(a.pool->log_votes + a.slots[j + kKeysAhead]),
               _MM_HINT_T0);
}

KVD_AVX2 inline float HorizontalSum(__m256 v) {
  const __m128 pairs = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 halves = _mm_add_ps(pairs, _mm_movehl_ps(pairs, pairs));
  return _mm_cvtss_f32(_mm_add_ss(halves, _mm_movehdup_ps(halves)));
}

KVD_AVX2 inline float HorizontalMax(__m256 v) {
  const __m128 pairs = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 halves = _mm_max_ps(pairs, _mm_movehl_ps(pairs, pairs));
  return _mm_cvtss_f32(_mm_max_ss(halves, _mm_movehdup_ps(halves)));
}

// Turns head g's logits into exp(logit − max) in place; returns their sum.
KVD_AVX2 inline double Softmax(float* weights, int32_t entries) {
  __m256 max8 = _mm256_set1_ps(-INFINITY);
  int32_t j = 0;
  for (; j + 8 <= entries; j += 8) max8 = _mm256_max_ps(max8, _mm256_loadu_ps(weights + j));
  float max_logit = HorizontalMax(max8);
  for (; j < entries; ++j) max_logit = std::max(max_logit, weights[j]);
  const __m256 max_vector = _mm256_set1_ps(max_logit);
  __m256 sum8 = _mm256_setzero_ps();
  j = 0;
  for (; j + 8 <= entries; j += 8) {
    const __m256 w = ExpOfNonPositive(_mm256_sub_ps(_mm256_loadu_ps(weights + j), max_vector));
    _mm256_storeu_ps(weights + j, w);
    sum8 = _mm256_add_ps(sum8, w);
  }
  double total = HorizontalSum(sum8);
  for (; j < entries; ++j) {
    weights[j] = std::exp(weights[j] - max_logit);
    total += weights[j];
  }
  return total;
}

// The row in Steps' vectors: Steps::Logits<T>(row) writes every head's logits, and
// Steps::AccumulateHeads<T, kHeads>(row, first, begin, end) adds entries [begin, end)'s weighted
// values to the outputs of heads [first, first + kHeads) (four, two or one at a time, so that
// each value is loaded once for them); the softmax and the final division are shared.
template <class Steps, class T>
KVD_AVX2 void Run(const AttentionRow& a) {
  const Row<T> row{a};
  Steps::Logits(row);
  for (int32_t g = 0; g < a.group; ++g) a.totals[g] = Softmax(row.Weights(g), a.entries);
  std::fill(a.out, a.out + static_cast<int64_t>(a.group) * a.head_dim, 0.0f);
  for (int32_t begin = 0; begin < a.entries; begin += kValueBlock) {
    const int32_t end = std::min(a.entries, begin + kValueBlock);
    int32_t g = 0;
    for (; g + 4 <= a.group; g += 4) Steps::template AccumulateHeads<T, 4>(row, g, begin, end);
    for (; g + 2 <= a.group; g += 2) Steps::template AccumulateHeads<T, 2>(row, g, begin, end);
    for (; g < a.group; ++g) Steps::template AccumulateHeads<T, 1>(row, g, begin, end);
  }
  for (int32_t g = 0; g < a.group; ++g) {
    const __m256 inverse = _mm256_set1_ps(static_cast<float>(1.0 / a.totals[g]));
    float* out = a.out + static_cast<int64_t>(g) * a.head_dim;
    int32_t d = 0;
    for (; d + 8 <= a.head_dim; d += 8) {
      _mm256_storeu_ps(out + d, _mm256_mul_ps(inverse, _mm256_loadu_ps(out + d)));
    }
    for (; d < a.head_dim; ++d) out[d] *= static_cast<float>(1.0 / a.totals[g]);
  }
}

// Runs the row on Steps over the pool's element type.
template <class Steps>
KVD_AVX2 void RunOnPool(const AttentionRow& a) {
  if (a.pool->dtype == DType::kBF16) {
    Run<Steps, uint16_t>(a);
  } else {
    Run<Steps, float>(a);
  }
}

}  // namespace kvd::kernels::cpu::attention_steps
