// One vector's dot products with every row of a matrix kept transposed ([dims, rows]), each
// summed over the dimensions in order with a rounding after every product and every sum, so
// that every kernel gives the scalar reference's bits: KeepKV's search for a merge partner
// among a head's keys. One kernel per instruction set (tests/unit/kernels/row_dots_test.cc).
#pragma once

#include <cstdint>

namespace kvd::kernels::cpu {

// out[j] = Σ_d a[d] · transposed[d · rows + j] for j < rows, summed in the order of d from 0.
using RowDotsKernel = void (*)(const float* a, const float* transposed, int32_t dims,
                               int32_t rows, float* out);

RowDotsKernel ScalarRowDots();
// Eight and sixteen rows a vector, four vectors of sums held over all the dimensions; products
// and sums as separate instructions (a fused multiply-add would round once, not twice).
RowDotsKernel Avx2RowDots();
RowDotsKernel Avx512RowDots();

}  // namespace kvd::kernels::cpu
