// The AVX2 RMSNorm (rms_norm.h): eight floats a step widened to two double vectors, four
// independent sums so that the adds' latency does not bound the loop. Compiled for AVX2 function
// by function.
#include <immintrin.h>

#include <cmath>

#include "kernels/cpu/isa_targets.h"
#include "kernels/cpu/rms_norm.h"

namespace kvd::kernels::cpu {
namespace {

KVD_AVX2 double SumOfSquares(const float* x, int64_t n) {
  __m256d sums[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(),
                     _mm256_setzero_pd()};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
#pragma GCC unroll 4
    for (int part = 0; part < 4; ++part) {
      const __m256d v = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4 * part));
      sums[part] = _mm256_fmadd_pd(v, v, sums[part]);
    }
  }
  const __m256d total =
      _mm256_add_pd(_mm256_add_pd(sums[0], sums[1]), _mm256_add_pd(sums[2], sums[3]));
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, total);
  double sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  for (; i < n; ++i) sum += double{x[i]} * x[i];
  return sum;
}

KVD_AVX2 void Run(const float* x, const float* weight, float eps, float* out, int64_t n) {
  const auto inv_rms =
      static_cast<float>(1.0 / std::sqrt(SumOfSquares(x, n) / static_cast<double>(n) + eps));
  const __m256 scale = _mm256_set1_ps(inv_rms);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 scaled = _mm256_mul_ps(_mm256_loadu_ps(x + i), scale);
    _mm256_storeu_ps(out + i, _mm256_mul_ps(scaled, _mm256_loadu_ps(weight + i)));
  }
  for (; i < n; ++i) out[i] = x[i] * inv_rms * weight[i];
}

}  // namespace

RmsNormKernel Avx2RmsNorm() { return Run; }

}  // namespace kvd::kernels::cpu
