// The AVX2 attention row (attention_row.h): each key and value read once per row for all the
// group's heads, eight dimensions a step, accumulated in f32; softmax weights by std::exp as
// the reference computes them. Compiled for AVX2 function by function.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/cpu/attention_row.h"

#define KVD_AVX2 __attribute__((target("avx2,fma")))

namespace kvd::kernels::cpu {
namespace {

KVD_AVX2 float HorizontalSum(__m256 v) {
  const __m128 pairs = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 halves = _mm_add_ps(pairs, _mm_movehl_ps(pairs, pairs));
  return _mm_cvtss_f32(_mm_add_ss(halves, _mm_movehdup_ps(halves)));
}

KVD_AVX2 float Dot(const float* a, const float* b, int32_t n) {
  __m256 sum = _mm256_setzero_ps();
  int32_t d = 0;
  for (; d + 8 <= n; d += 8)
    sum = _mm256_fmadd_ps(_mm256_loadu_ps(a + d), _mm256_loadu_ps(b + d), sum);
  float total = HorizontalSum(sum);
  for (; d < n; ++d) total += a[d] * b[d];
  return total;
}

// dst[d] += weight · value[d].
KVD_AVX2 void AddScaled(float* dst, const float* value, float weight, int32_t n) {
  const __m256 w = _mm256_set1_ps(weight);
  int32_t d = 0;
  for (; d + 8 <= n; d += 8) {
    _mm256_storeu_ps(dst + d,
                     _mm256_fmadd_ps(w, _mm256_loadu_ps(value + d), _mm256_loadu_ps(dst + d)));
  }
  for (; d < n; ++d) dst[d] += weight * value[d];
}

KVD_AVX2 void Run(const AttentionRow& a) {
  const KvPool& pool = *a.pool;
  for (int32_t j = 0; j < a.entries; ++j) {
    const float* key = pool.keys + a.slots[j] * a.head_dim;
    const float log_vote = pool.log_votes[a.slots[j]];
    for (int32_t g = 0; g < a.group; ++g) {
      a.weights[static_cast<int64_t>(g) * a.entries + j] =
          Dot(a.queries + static_cast<int64_t>(g) * a.head_dim, key, a.head_dim) * a.scale +
          log_vote;
    }
  }
  for (int32_t g = 0; g < a.group; ++g) {
    float* weights = a.weights + static_cast<int64_t>(g) * a.entries;
    const float max_logit = *std::max_element(weights, weights + a.entries);
    double total = 0.0;
    for (int32_t j = 0; j < a.entries; ++j) {
      weights[j] = std::exp(weights[j] - max_logit);
      total += weights[j];
    }
    float* dst = a.out + static_cast<int64_t>(g) * a.head_dim;
    std::fill(dst, dst + a.head_dim, 0.0f);
    for (int32_t j = 0; j < a.entries; ++j) {
      AddScaled(dst, pool.values + a.slots[j] * a.head_dim, weights[j], a.head_dim);
    }
    const float inverse = static_cast<float>(1.0 / total);
    for (int32_t d = 0; d < a.head_dim; ++d) dst[d] *= inverse;
    a.totals[g] = total;
  }
}

}  // namespace

AttentionRowKernel Avx2AttentionRow() { return Run; }

}  // namespace kvd::kernels::cpu
