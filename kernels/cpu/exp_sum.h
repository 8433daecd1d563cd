// Σ_j exp((row[j] − max) · scale) over a row of logits, the sum behind TopLogits'
// log-normalizers, a whole vocabulary per row and step. One kernel per instruction set; the
// scalar one, every term in double, is the reference (tests/unit/kernels/exp_sum_test.cc).
#pragma once

#include <cstdint>

namespace kvd::kernels::cpu {

// `max` is at least every row[j] and finite; `scale` is positive and finite; entries may be
// -inf (they add nothing) but not NaN.
using ExpSumKernel = double (*)(const float* row, int64_t n, float max, float scale);

ExpSumKernel ScalarExpSum();
// AVX2 with FMA: terms by the vector exp (vector_exp_avx2.h), added in f32 vectors over 256
// entries at a time and the blocks' sums in double: within 1e-6 of the reference's sum.
ExpSumKernel Avx2ExpSum();

}  // namespace kvd::kernels::cpu
