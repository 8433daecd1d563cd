#include "kernels/cpu/silu_mul.h"

#include <cmath>

namespace kvd::kernels::cpu {
namespace {

void RunScalar(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

}  // namespace

SiluMulKernel ScalarSiluMul() { return RunScalar; }

}  // namespace kvd::kernels::cpu
