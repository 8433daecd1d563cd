// The first entry of a range of floats above a threshold: the scan behind TopLogits' selection,
// which keeps the k largest logits seen so far and looks closer only at entries that beat the
// smallest of them. One kernel per instruction set; the scalar one is the reference
// (tests/unit/kernels/first_above_test.cc).
#pragma once

#include <cstdint>

namespace kvd::kernels::cpu {

// The first j in [begin, end) with values[j] > threshold, or `end`. Entries may be ±inf but not
// NaN.
using FirstAboveKernel = int64_t (*)(const float* values, int64_t begin, int64_t end,
                                     float threshold);

FirstAboveKernel ScalarFirstAbove();
// AVX2: sixteen entries compared a step.
FirstAboveKernel Avx2FirstAbove();

}  // namespace kvd::kernels::cpu
