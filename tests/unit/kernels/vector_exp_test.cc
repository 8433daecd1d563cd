// The AVX-512 exponential against the AVX2 one it mirrors: the same bits in every lane, over
// softmax arguments from 0 down past the underflow, -inf included, and within 2 ulp of std::exp.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/vector_exp_avx2.h"
#include "kernels/cpu/vector_exp_avx512.h"

namespace kvd::kernels::cpu {
namespace {

KVD_AVX2 void ExpAvx2(const float* x, float* out) {
  _mm256_storeu_ps(out, ExpOfNonPositive(_mm256_loadu_ps(x)));
  _mm256_storeu_ps(out + 8, ExpOfNonPositive(_mm256_loadu_ps(x + 8)));
}

KVD_AVX512 void ExpAvx512(const float* x, float* out) {
  _mm512_storeu_ps(out, ExpOfNonPositive(_mm512_loadu_ps(x)));
}

TEST(VectorExpTest, Avx512LanesAreTheAvx2Bits) {
  if ((HostCpuFeatures().isas() & kAvx512Isas) != kAvx512Isas) {
    GTEST_SKIP() << "no AVX-512 here";
  }
  std::vector<float> inputs = {
      0.0f, -0.0f, -87.3f, -87.2999f, -87.30001f, -100.0f, -std::numeric_limits<float>::infinity()};
  for (float x = 0.0f; x > -90.0f; x -= 0.0137f) inputs.push_back(x);
  while (inputs.size() % 16 != 0) inputs.push_back(-1.0f);
  for (size_t i = 0; i < inputs.size(); i += 16) {
    float avx2[16], avx512[16];
    ExpAvx2(&inputs[i], avx2);
    ExpAvx512(&inputs[i], avx512);
    for (int lane = 0; lane < 16; ++lane) {
      const float x = inputs[i + lane];
      EXPECT_EQ(std::bit_cast<uint32_t>(avx512[lane]), std::bit_cast<uint32_t>(avx2[lane]))
          << "x " << x;
      const float want = x < -87.3f ? 0.0f : std::exp(x);
      EXPECT_LE(std::abs(avx512[lane] - want), 2.0f * std::abs(std::nextafter(want, 1e30f) - want))
          << "x " << x;
    }
  }
}

}  // namespace
}  // namespace kvd::kernels::cpu
