// Every gated-activation kernel this CPU runs against the scalar reference: lengths around the
// kernels' step of 8, gates across the range where silu bends and far out on both sides, and
// values that must pass through (zero, infinities, NaN).
#include "kernels/cpu/silu_mul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/kernel_table.h"

namespace kvd::kernels::cpu {
namespace {

TEST(SiluMulTest, EveryKernelMatchesTheScalarReference) {
  std::mt19937 random(5);
  std::normal_distribution<float> normal(0.0f, 6.0f);
  for (const KernelVariant<SiluMulKernel>& variant : AllKernels().silu_mul.RunnableHere()) {
    SCOPED_TRACE(variant.name);
    for (int64_t n : {1, 7, 8, 9, 31, 384, 8192}) {
      std::vector<float> gate(static_cast<size_t>(n)), up(gate.size());
      for (float& x : gate) x = normal(random);
      for (float& x : up) x = normal(random);
      for (size_t i = 5; i < gate.size(); i += 11) gate[i] *= 20.0f;  // past where exp saturates
      std::vector<float> want(gate.size()), got(gate.size());
      ScalarSiluMul()(gate.data(), up.data(), want.data(), n);
      variant.kernel(gate.data(), up.data(), got.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        // The vector exp is within 2 ulp; the division and product round as the reference's do.
        EXPECT_NEAR(got[i], want[i], 4e-7f * std::abs(want[i]) + 1e-30f)
            << "n " << n << " gate " << gate[i] << " up " << up[i];
      }
    }
  }
}

TEST(SiluMulTest, WritesInPlaceAndPassesSpecialValuesThrough) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> gate = {0.0f, -0.0f, 1.0f, -1.0f, 100.0f, -100.0f, inf, -200.0f, NAN};
  const std::vector<float> up(gate.size(), 2.0f);
  const int64_t n = static_cast<int64_t>(gate.size());
  std::vector<float> want(gate.size());
  ScalarSiluMul()(gate.data(), up.data(), want.data(), n);
  HostKernels().silu_mul.kernel(gate.data(), up.data(), gate.data(), n);
  EXPECT_EQ(gate[0], 0.0f);
  EXPECT_NEAR(gate[2], 2.0f / (1.0f + std::exp(-1.0f)), 1e-6f);
  EXPECT_NEAR(gate[3], -2.0f / (1.0f + std::exp(1.0f)), 1e-6f);
  EXPECT_EQ(gate[4], 200.0f);
  EXPECT_NEAR(gate[5], 0.0f, 1e-30f);
  EXPECT_EQ(gate[6], inf);
  EXPECT_NEAR(gate[7], 0.0f, 1e-30f);
  EXPECT_TRUE(std::isnan(gate[8]));
  for (size_t i = 0; i < gate.size(); ++i) {
    if (std::isfinite(want[i])) {
      EXPECT_NEAR(gate[i], want[i], 1e-6f) << i;
    }
  }
}

}  // namespace
}  // namespace kvd::kernels::cpu
