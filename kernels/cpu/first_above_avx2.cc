// The AVX2 scan of first_above.h. Compiled for AVX2 function by function.
#include <immintrin.h>

#include <bit>

#include "kernels/cpu/first_above.h"
#include "kernels/cpu/isa_targets.h"

namespace kvd::kernels::cpu {
namespace {

KVD_AVX2 int64_t Run(const float* values, int64_t begin, int64_t end, float threshold) {
  const __m256 bound = _mm256_set1_ps(threshold);
  int64_t j = begin;
  for (; j + 16 <= end; j += 16) {
    const int low =
        _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(values + j), bound, _CMP_GT_OQ));
    const int high =
        _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(values + j + 8), bound, _CMP_GT_OQ));
    const unsigned above = static_cast<unsigned>(low | (high << 8));
    if (above != 0) return j + std::countr_zero(above);
  }
  for (; j < end; ++j) {
    if (values[j] > threshold) return j;
  }
  return end;
}

}  // namespace

FirstAboveKernel Avx2FirstAbove() { return Run; }

}  // namespace kvd::kernels::cpu
