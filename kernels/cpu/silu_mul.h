// silu(gate) · up over a run of floats, the gated activation of LLaMA's MLP, applied to every
// element of a step's intermediate activations. One kernel per instruction set; the scalar one
// is the reference (tests/unit/kernels/silu_mul_test.cc).
#pragma once

#include <cstdint>

namespace kvd::kernels::cpu {

// out[i] = gate[i] / (1 + exp(-gate[i])) · up[i] for i < n; out may be gate or up.
using SiluMulKernel = void (*)(const float* gate, const float* up, float* out, int64_t n);

SiluMulKernel ScalarSiluMul();
// AVX2 with FMA: exp(-|gate|) by the vector exp (vector_exp_avx2.h), so no term overflows.
SiluMulKernel Avx2SiluMul();

}  // namespace kvd::kernels::cpu
