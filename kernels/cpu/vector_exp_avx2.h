// e^x on eight floats at once with AVX2 and FMA, for the kernels' softmax sums: Cephes' range
// reduction to [-ln2/2, ln2/2] and degree-6 polynomial, within 2 ulp of std::exp, and exactly 1
// at 0. Include only from files compiled function by function for AVX2 (attribute target).
#pragma once

#include "kernels/cpu/isa_targets.h"

namespace kvd::kernels::cpu {

// For x <= 0 (softmax arguments, -inf included); below -87.3 the result is 0.
KVD_AVX2 inline __m256 ExpOfNonPositive(__m256 x) {
  const __m256 log2e = _mm256_set1_ps(1.44269504088896341f);
  const __m256 ln2_high = _mm256_set1_ps(0.693359375f);
  const __m256 ln2_low = _mm256_set1_ps(-2.12194440e-4f);
  const __m256 underflow = _mm256_set1_ps(-87.3f);
  const __m256 too_small = _mm256_cmp_ps(x, underflow, _CMP_LT_OQ);
  x = _mm256_max_ps(x, underflow);
  const __m256 n =
      _mm256_round_ps(_mm256_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, ln2_high, x);
  r = _mm256_fnmadd_ps(n, ln2_low, r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i exponent =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_andnot_ps(too_small, _mm256_mul_ps(p, _mm256_castsi256_ps(exponent)));
}

}  // namespace kvd::kernels::cpu
