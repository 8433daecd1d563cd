// Every exp-sum kernel this CPU runs against the scalar reference: lengths around the kernels'
// steps of 16 and 256 and a whole Llama 3 vocabulary, temperatures from 0.1 to 2, entries of
// -inf, and a row that is one finite logit.
#include "kernels/cpu/exp_sum.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/kernel_table.h"

namespace kvd::kernels::cpu {
namespace {

TEST(ExpSumTest, EveryKernelMatchesTheScalarReference) {
  std::mt19937 random(3);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  for (const KernelVariant<ExpSumKernel>& variant : AllKernels().exp_sum.RunnableHere()) {
    SCOPED_TRACE(variant.name);
    for (int64_t n : {1, 15, 16, 17, 255, 256, 257, 1000, 128256}) {
      std::vector<float> row(static_cast<size_t>(n));
      for (float& x : row) x = normal(random);
      for (size_t j = 3; j < row.size(); j += 7) row[j] = -std::numeric_limits<float>::infinity();
      float max = -std::numeric_limits<float>::infinity();
      for (float x : row) max = std::max(max, x);
      if (std::isinf(max)) max = row[0] = 1.0f;
      for (float scale : {1.0f, 0.5f, 2.0f, 10.0f}) {
        const double want = ScalarExpSum()(row.data(), n, max, scale);
        const double got = variant.kernel(row.data(), n, max, scale);
        // What TopLogits keeps is the log of the sum: the vector exp is within 2 ulp of each term,
        // and a term's argument, (logit − max) · scale, rounds once more in f32 (at most
        // 6e-8 of |logit − max| · scale: 4e-6 at T = 0.1 for the terms that matter).
        EXPECT_NEAR(std::log(got), std::log(want), 1e-6 * std::max(1.0f, scale))
            << "n " << n << " scale " << scale;
      }
    }
    // One finite logit, the rest -inf: exactly exp(0) = 1.
    std::vector<float> single(300, -std::numeric_limits<float>::infinity());
    single[123] = 2.5f;
    EXPECT_EQ(variant.kernel(single.data(), 300, 2.5f, 1.0f), 1.0);
    EXPECT_EQ(variant.kernel(single.data(), 300, 2.5f, 3.0f), 1.0);
  }
}

}  // namespace
}  // namespace kvd::kernels::cpu
