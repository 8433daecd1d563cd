// Every RMSNorm kernel this CPU runs against the scalar reference: widths around the kernels'
// steps of 8 and 16 and the models' hidden sizes, rows of very different magnitudes, a row whose
// squares overflow f32, a zero row, and in place.
#include "kernels/cpu/rms_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/kernel_table.h"

namespace kvd::kernels::cpu {
namespace {

TEST(RmsNormTest, EveryKernelMatchesTheScalarReference) {
  std::mt19937 random(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const KernelVariant<RmsNormKernel>& variant : AllKernels().rms_norm.RunnableHere()) {
    SCOPED_TRACE(variant.name);
    for (const int64_t n : {1, 7, 8, 15, 16, 17, 128, 2048, 4099}) {
      for (const float magnitude : {1e-20f, 1.0f, 1e20f}) {
        std::vector<float> x(static_cast<size_t>(n)), weight(x.size());
        for (float& v : x) v = magnitude * normal(random);
        for (float& v : weight) v = 1.0f + 0.1f * normal(random);
        std::vector<float> want(x.size()), got(x.size());
        ScalarRmsNorm()(x.data(), weight.data(), 1e-5f, want.data(), n);
        variant.kernel(x.data(), weight.data(), 1e-5f, got.data(), n);
        for (int64_t i = 0; i < n; ++i) {
          // inv_rms from sums in another order may round one ulp apart, and each of the two
          // products rounds: at most about 3 · 2^-23 relative.
          EXPECT_NEAR(got[i], want[i], 4e-7f * std::abs(want[i])) << "n " << n << " i " << i;
        }
      }
    }
  }
}

TEST(RmsNormTest, NormalizesAnyFiniteRowAndZeroInPlace) {
  for (const RmsNormKernel kernel : {ScalarRmsNorm(), HostKernels().rms_norm.kernel}) {
    // Squares of 3e30 overflow f32; their mean is 9e60, so every output is ±1 times its weight.
    std::vector<float> x(40);
    for (size_t i = 0; i < x.size(); ++i) x[i] = i % 2 == 0 ? 3e30f : -3e30f;
    const std::vector<float> weight(x.size(), 2.0f);
    kernel(x.data(), weight.data(), 1e-6f, x.data(), std::ssize(x));
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], i % 2 == 0 ? 2.0f : -2.0f, 1e-6f);
    std::vector<float> zeros(24, 0.0f);
    kernel(zeros.data(), weight.data(), 1e-6f, zeros.data(), std::ssize(zeros));
    for (const float v : zeros) EXPECT_EQ(v, 0.0f);
  }
}

}  // namespace
}  // namespace kvd::kernels::cpu
