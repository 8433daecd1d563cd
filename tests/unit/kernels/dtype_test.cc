#include "kernels/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace kvd::kernels {
namespace {

TEST(DTypeTest, BF16RoundsToNearestEven) {
  EXPECT_EQ(FloatToBF16(1.0f), 0x3f80);
  EXPECT_EQ(BF16ToFloat(0x3f80), 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
  EXPECT_EQ(FloatToBF16(1.0f + 1.0f / 256), 0x3f80);
  EXPECT_EQ(FloatToBF16(1.0f + 3.0f / 256), 0x3f82);
  EXPECT_TRUE(std::isnan(BF16ToFloat(FloatToBF16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(DTypeTest, F16RoundTripsRepresentableValues) {
  for (float value :
       {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.9604644775390625e-08f}) {
    EXPECT_EQ(F16ToFloat(FloatToF16(value)), value) << value;
  }
  EXPECT_TRUE(std::isinf(F16ToFloat(FloatToF16(1e6f))));
  EXPECT_EQ(FloatToF16(1.0f), 0x3c00);
}

}  // namespace
}  // namespace kvd::kernels
