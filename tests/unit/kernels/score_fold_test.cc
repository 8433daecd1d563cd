// Every score-fold kernel this CPU runs gives the scalar reference's bits, for both reductions,
// for lengths around the AVX2 kernel's step of four, weights from underflow to one and totals
// from one to millions: a score's last bit can decide a tie in a cut.
#include "kernels/cpu/score_fold.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/kernel_table.h"

namespace kvd::kernels::cpu {
namespace {

TEST(ScoreFoldTest, EveryKernelGivesTheScalarReferencesBits) {
  std::mt19937 random(7);
  std::uniform_real_distribution<float> exponent(-40.0f, 0.0f);
  for (const KernelVariant<ScoreFoldKernel>& variant : AllKernels().score_fold.RunnableHere()) {
    SCOPED_TRACE(variant.name);
    for (int32_t n : {1, 3, 4, 5, 7, 8, 9, 63, 1000}) {
      for (double total : {1.0, 3.0, 1234.5678, 7.5e6}) {
        for (ScoreReduce reduce : {ScoreReduce::kMax, ScoreReduce::kSum}) {
          std::vector<float> weights(static_cast<size_t>(n)), start(static_cast<size_t>(n));
          for (float& w : weights) w = std::exp(exponent(random));
          for (float& s : start) s = std::exp(exponent(random)) / 1000.0f;
          weights[0] = 1.0f;                                             // the row's largest logit
          if (n > 2) start[2] = static_cast<float>(weights[2] / total);  // a tie
          std::vector<float> want = start, got = start;
          // Folded several times, as a row's group heads and later rows do.
          for (int fold = 0; fold < 3; ++fold) {
            ScalarScoreFold()(weights.data(), n, total, reduce, want.data());
            variant.kernel(weights.data(), n, total, reduce, got.data());
          }
          EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
              << "n " << n << " total " << total << " reduce " << static_cast<int>(reduce);
        }
      }
    }
  }
}

TEST(ScoreFoldTest, MaxKeepsTheHighestProbabilityAndSumAddsThemUp) {
  const std::vector<float> weights = {2.0f, 1.0f, 0.5f, 0.25f, 0.25f};
  std::vector<float> max = {0.1f, 0.5f, 0.0f, 0.0f, 0.2f}, sum(5, 0.0f);
  HostKernels().score_fold.kernel(weights.data(), 5, 4.0, ScoreReduce::kMax, max.data());
  HostKernels().score_fold.kernel(weights.data(), 5, 4.0, ScoreReduce::kSum, sum.data());
  EXPECT_EQ(max, (std::vector<float>{0.5f, 0.5f, 0.125f, 0.0625f, 0.2f}));
  EXPECT_EQ(sum, (std::vector<float>{0.5f, 0.25f, 0.125f, 0.0625f, 0.0625f}));
}

}  // namespace
}  // namespace kvd::kernels::cpu
