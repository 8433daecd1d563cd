// Every row-dots kernel this CPU runs gives the scalar reference's bits (each product and sum
// rounded in order, none fused), at row counts around the kernels' vectors and blocks; and the
// reference is the dot product it claims to be.
#include "kernels/cpu/row_dots.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/kernel_table.h"

namespace kvd::kernels::cpu {
namespace {

TEST(RowDotsTest, EveryKernelGivesTheScalarReferencesBits) {
  std::mt19937 random(3);
  std::normal_distribution<float> normal;
  for (int32_t dims : {1, 23, 64, 128}) {
    for (int32_t rows : {1, 7, 8, 15, 16, 17, 33, 64, 65, 100, 513}) {
      std::vector<float> a(dims), transposed(static_cast<size_t>(dims) * rows);
      for (float& x : a) x = normal(random);
      for (float& x : transposed) x = normal(random);
      std::vector<float> want(rows);
      ScalarRowDots()(a.data(), transposed.data(), dims, rows, want.data());
      for (const KernelVariant<RowDotsKernel>& variant : AllKernels().row_dots.RunnableHere()) {
        std::vector<float> got(rows, NAN);
        variant.kernel(a.data(), transposed.data(), dims, rows, got.data());
        EXPECT_EQ(std::memcmp(got.data(), want.data(), rows * sizeof(float)), 0)
            << variant.name << ", " << dims << " dims, " << rows << " rows";
      }
    }
  }
}

TEST(RowDotsTest, TheReferenceIsEachRowsDotProduct) {
  std::mt19937 random(4);
  std::normal_distribution<float> normal;
  constexpr int32_t kDims = 40;
  constexpr int32_t kRows = 19;
  std::vector<float> a(kDims), transposed(kDims * kRows);
  for (float& x : a) x = normal(random);
  for (float& x : transposed) x = normal(random);
  std::vector<float> got(kRows);
  ScalarRowDots()(a.data(), transposed.data(), kDims, kRows, got.data());
  for (int32_t j = 0; j < kRows; ++j) {
    double dot = 0.0;
    for (int32_t d = 0; d < kDims; ++d) dot += double{a[d]} * transposed[d * kRows + j];
    EXPECT_NEAR(got[j], dot, 1e-5 * kDims) << "row " << j;
  }
}

}  // namespace
}  // namespace kvd::kernels::cpu
