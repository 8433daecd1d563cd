// The AVX2 gated activation (silu_mul.h). With e = exp(-|x|) <= 1, silu(x) is x / (1 + e) for
// x >= 0 and x · e / (1 + e) below, so the one exponential never overflows. Compiled for AVX2
// function by function.
#include <immintrin.h>

#include "kernels/cpu/isa_targets.h"
#include "kernels/cpu/silu_mul.h"
#include "kernels/cpu/vector_exp_avx2.h"

namespace kvd::kernels::cpu {
namespace {

KVD_AVX2 __m256 SiluTimes(__m256 x, __m256 up) {
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  const __m256 e = ExpOfNonPositive(_mm256_or_ps(x, sign_bit));  // exp(-|x|)
  const __m256 negative = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
  const __m256 numerator = _mm256_blendv_ps(x, _mm256_mul_ps(x, e), negative);
  return _mm256_mul_ps(_mm256_div_ps(numerator, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), up);
}

KVD_AVX2 void Run(const float* gate, const float* up, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, SiluTimes(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
  }
  if (i == n) return;
  alignas(32) float gate_tail[8] = {}, up_tail[8] = {}, out_tail[8];
  for (int64_t t = 0; t < n - i; ++t) {
    gate_tail[t] = gate[i + t];
    up_tail[t] = up[i + t];
  }
  _mm256_store_ps(out_tail, SiluTimes(_mm256_load_ps(gate_tail), _mm256_load_ps(up_tail)));
  for (int64_t t = 0; t < n - i; ++t) out[i + t] = out_tail[t];
}

}  // namespace

SiluMulKernel Avx2SiluMul() { return Run; }

}  // namespace kvd::kernels::cpu
