// RMSNorm of one row of activations, twice a layer and once before the output head for every row
// of a step. One kernel per instruction set; the scalar one is the reference
// (tests/unit/kernels/rms_norm_test.cc).
#pragma once

#include <cstdint>

namespace kvd::kernels::cpu {

// out[i] = x[i] · inv_rms · weight[i] for i < n (n > 0), where inv_rms = 1 / sqrt(mean of the
// x[i]² + eps), the squares summed in double so that no finite row overflows; out may be x.
using RmsNormKernel = void (*)(const float* x, const float* weight, float eps, float* out,
                               int64_t n);

RmsNormKernel ScalarRmsNorm();
// AVX2 with FMA: the squares in four-wide double vectors; the products as the reference rounds
// them, so its outputs differ from the reference's only where the sums' order rounds inv_rms
// differently.
RmsNormKernel Avx2RmsNorm();

}  // namespace kvd::kernels::cpu
