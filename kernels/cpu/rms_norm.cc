#include "kernels/cpu/rms_norm.h"

#include <cmath>

namespace kvd::kernels::cpu {
namespace {

void RunScalar(const float* x, const float* weight, float eps, float* out, int64_t n) {
  double sum_squares = 0.0;
  for (int64_t i = 0; i < n; ++i) sum_squares += double{x[i]} * x[i];
  const auto inv_rms =
      static_cast<float>(1.0 / std::sqrt(sum_squares / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv_rms * weight[i];
}

}  // namespace

RmsNormKernel ScalarRmsNorm() { return RunScalar; }

}  // namespace kvd::kernels::cpu
