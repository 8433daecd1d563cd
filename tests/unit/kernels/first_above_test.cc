// Every first-above kernel this CPU runs against the scalar reference: ranges that start and end
// inside and outside the kernels' steps of sixteen, hits in every lane, equal values (which do
// not count), ±inf, and ranges with no hit.
#include "kernels/cpu/first_above.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/kernel_table.h"

namespace kvd::kernels::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(FirstAboveTest, EveryKernelMatchesTheScalarReference) {
  std::mt19937 random(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(300);
  for (float& x : values) x = normal(random);
  for (size_t j = 0; j < values.size(); j += 11) values[j] = -kInf;
  values[150] = kInf;
  for (const KernelVariant<FirstAboveKernel>& variant : AllKernels().first_above.RunnableHere()) {
    SCOPED_TRACE(variant.name);
    for (int64_t begin : {0, 1, 15, 16, 17, 40, 151}) {
      for (int64_t end : {begin, begin + 1, begin + 16, begin + 33, int64_t{300}}) {
        if (end > 300) continue;
        for (float threshold : {-kInf, -1.0f, 0.5f, 1.5f, 2.5f, kInf}) {
          EXPECT_EQ(variant.kernel(values.data(), begin, end, threshold),
                    ScalarFirstAbove()(values.data(), begin, end, threshold))
              << "begin " << begin << " end " << end << " threshold " << threshold;
        }
      }
    }
  }
}

TEST(FirstAboveTest, FindsAHitInEveryLaneAndSkipsEqualValues) {
  for (const FirstAboveKernel kernel : {ScalarFirstAbove(), HostKernels().first_above.kernel}) {
    for (int64_t hit = 0; hit < 40; ++hit) {
      std::vector<float> values(40, 1.0f);
      values[hit] = 1.0f + 1e-6f;
      EXPECT_EQ(kernel(values.data(), 0, 40, 1.0f), hit);
      EXPECT_EQ(kernel(values.data(), hit + 1, 40, 1.0f), 40) << "after the hit";
      values[hit] = 1.0f;
      EXPECT_EQ(kernel(values.data(), 0, 40, 1.0f), 40) << "an equal value is not above";
    }
  }
}

}  // namespace
}  // namespace kvd::kernels::cpu
