#include "kernels/cpu/row_dots.h"

namespace kvd::kernels::cpu {
namespace {

// The scalar rounding of one product and one sum at a time, which the vector kernels match.
void RunScalar(const float* a, const float* transposed, int32_t dims, int32_t rows, float* out) {
  for (int32_t j = 0; j < rows; ++j) {
    float sum = 0.0f;
    for (int32_t d = 0; d < dims; ++d) {
      const float product = a[d] * transposed[static_cast<int64_t>(d) * rows + j];
      sum += product;
    }
    out[j] = sum;
  }
}

}  // namespace

RowDotsKernel ScalarRowDots() { return RunScalar; }

}  // namespace kvd::kernels::cpu
