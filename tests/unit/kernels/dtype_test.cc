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

TEST(DTypeTest, F16RoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties go to the even mantissa (1.0).
  EXPECT_EQ(FloatToF16(1.0f + 1.0f / 2048), 0x3c00);
  EXPECT_EQ(FloatToF16(1.0f + 3.0f / 2048), 0x3c02);
  EXPECT_EQ(FloatToF16(-(1.0f + 3.0f / 2048)), 0xbc02);
  // 65519 rounds down to the largest f16; 65520, the tie above it, goes to inf.
  EXPECT_EQ(FloatToF16(65519.0f), 0x7bff);
  EXPECT_EQ(FloatToF16(65520.0f), 0x7c00);
  EXPECT_EQ(FloatToF16(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_TRUE(std::isnan(F16ToFloat(FloatToF16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(DTypeTest, F16RoundsSubnormalsToNearestEven) {
  constexpr float kUnit = 5.9604644775390625e-08f;  // 2^-24, the smallest f16 subnormal
  EXPECT_EQ(FloatToF16(0.5f * kUnit), 0x0000);      // a tie: to the even zero
  EXPECT_EQ(FloatToF16(0.50001f * kUnit), 0x0001);
  EXPECT_EQ(FloatToF16(-0.5f * kUnit), 0x8000);
  EXPECT_EQ(FloatToF16(1.5f * kUnit), 0x0002);  // ties to 2, not 1
  EXPECT_EQ(FloatToF16(2.5f * kUnit), 0x0002);  // ties to 2, not 3
  EXPECT_EQ(FloatToF16(std::nextafter(0.5f, 0.0f) * kUnit), 0x0000);
  EXPECT_EQ(FloatToF16(1e-30f), 0x0000);
  // Just under the smallest normal (2^-14), rounding carries into it.
  EXPECT_EQ(FloatToF16(1023.75f * kUnit), 0x0400);
  EXPECT_EQ(FloatToF16(1023.25f * kUnit), 0x03ff);
}

}  // namespace
}  // namespace kvd::kernels
