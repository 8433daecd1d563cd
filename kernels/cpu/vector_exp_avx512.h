// e^x on sixteen floats at once with AVX-512: vector_exp_avx2.h's ExpOfNonPositive, operation for
// operation, so that a lane's result is the AVX2 one's bits. Include only from files whose
// AVX-512 functions carry KVD_AVX512 or more (attribute target).
#pragma once

#include "kernels/cpu/isa_targets.h"

namespace kvd::kernels::cpu {

// For x <= 0 (softmax arguments, -inf included); below -87.3 the result is 0.
KVD_AVX512 inline __m512 ExpOfNonPositive(__m512 x) {
  const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
  const __m512 ln2_high = _mm512_set1_ps(0.693359375f);
  const __m512 ln2_low = _mm512_set1_ps(-2.12194440e-4f);
  const __m512 underflow = _mm512_set1_ps(-87.3f);
  const __mmask16 in_range = _mm512_cmp_ps_mask(x, underflow, _CMP_NLT_UQ);
  x = _mm512_max_ps(x, underflow);
  const __m512 n =
      _mm512_roundscale_ps(_mm512_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, ln2_high, x);
  r = _mm512_fnmadd_ps(n, ln2_low, r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  const __m512i exponent =
      _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_maskz_mul_ps(in_range, p, _mm512_castsi512_ps(exponent));
}

}  // namespace kvd::kernels::cpu
