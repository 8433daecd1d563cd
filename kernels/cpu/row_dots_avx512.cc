// The AVX-512 row dots (row_dots.h): 16 rows a vector, four vectors of sums a pass. Compiled for
// AVX-512 function by function, with products and sums kept apart so that none is fused.
#include <immintrin.h>

#include "kernels/cpu/isa_targets.h"
#include "kernels/cpu/row_dots.h"

namespace kvd::kernels::cpu {
namespace {

constexpr int32_t kLanes = 16;
constexpr int32_t kBlock = 4 * kLanes;

KVD_AVX512 void Run(const float* a, const float* transposed, int32_t dims, int32_t rows, float* out) {
  int32_t j = 0;
  for (; j + kBlock <= rows; j += kBlock) {
    __m512 sums[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    const float* column = transposed + j;
    for (int32_t d = 0; d < dims; ++d, column += rows) {
      const __m512 weight = _mm512_set1_ps(a[d]);
      for (int v = 0; v < 4; ++v) {
        sums[v] = _mm512_add_ps(sums[v], _mm512_mul_ps(weight, _mm512_loadu_ps(column + v * kLanes)));
      }
    }
    for (int v = 0; v < 4; ++v) _mm512_storeu_ps(out + j + v * kLanes, sums[v]);
  }
  for (; j + kLanes <= rows; j += kLanes) {
    __m512 sum = _mm512_setzero_ps();
    const float* column = transposed + j;
    for (int32_t d = 0; d < dims; ++d, column += rows) {
      sum = _mm512_add_ps(sum, _mm512_mul_ps(_mm512_set1_ps(a[d]), _mm512_loadu_ps(column)));
    }
    _mm512_storeu_ps(out + j, sum);
  }
  for (; j < rows; ++j) {
    float sum = 0.0f;
    for (int32_t d = 0; d < dims; ++d) sum += a[d] * transposed[static_cast<int64_t>(d) * rows + j];
    out[j] = sum;
  }
}

}  // namespace

RowDotsKernel Avx512RowDots() { return Run; }

}  // namespace kvd::kernels::cpu
