// The AVX2 exp sum (exp_sum.h). Compiled for AVX2 function by function.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/cpu/exp_sum.h"
#include "kernels/cpu/isa_targets.h"
#include "kernels/cpu/vector_exp_avx2.h"

namespace kvd::kernels::cpu {
namespace {

// Entries whose terms one f32 vector pair adds up (32 a lane) before the sum goes to double.
constexpr int64_t kBlock = 256;

KVD_AVX2 double HorizontalSum(__m256 v) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  double sum = 0.0;
  for (float lane : lanes) sum += lane;
  return sum;
}

// exp((at[i] − max) · scale) for i < 8.
KVD_AVX2 __m256 Terms(const float* at, __m256 max, __m256 scale) {
  return ExpOfNonPositive(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(at), max), scale));
}

KVD_AVX2 double Run(const float* row, int64_t n, float max, float scale) {
  const __m256 max_vector = _mm256_set1_ps(max);
  const __m256 scale_vector = _mm256_set1_ps(scale);
  const int64_t vector_end = n / 16 * 16;
  double total = 0.0;
  for (int64_t begin = 0; begin < vector_end; begin += kBlock) {
    const int64_t end = std::min(vector_end, begin + kBlock);
    __m256 even = _mm256_setzero_ps(), odd = _mm256_setzero_ps();
    for (int64_t j = begin; j < end; j += 16) {
      even = _mm256_add_ps(even, Terms(row + j, max_vector, scale_vector));
      odd = _mm256_add_ps(odd, Terms(row + j + 8, max_vector, scale_vector));
    }
    total += HorizontalSum(_mm256_add_ps(even, odd));
  }
  for (int64_t j = vector_end; j < n; ++j) total += std::exp((double{row[j]} - max) * scale);
  return total;
}

}  // namespace

ExpSumKernel Avx2ExpSum() { return Run; }

}  // namespace kvd::kernels::cpu
