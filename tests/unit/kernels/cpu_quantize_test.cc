// Block quantization: every weight comes back within half a step of itself, the block layout is
// the one dtype.h documents, values a format cannot hold are refused, and activations quantize
// within half a step with the block sums of what they quantized to.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/quantize.h"

namespace kvd::kernels::cpu {
namespace {

std::vector<float> RandomRow(int64_t cols, float spread, uint32_t seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, spread);
  std::vector<float> row(static_cast<size_t>(cols));
  for (float& v : row) v = normal(random);
  return row;
}

TEST(CpuQuantizeTest, WeightsComeBackWithinHalfAStep) {
  const int64_t cols = 4 * kQuantBlock;
  for (float spread : {0.02f, 1.0f, 300.0f}) {
    const std::vector<float> row = RandomRow(cols, spread, 3);
    for (DType format : {DType::kInt8, DType::kInt4}) {
      std::vector<unsigned char> blocks(RowBytes(format, cols));
      ASSERT_TRUE(QuantizeRow(format, row.data(), cols, blocks.data()));
      std::vector<float> back(cols);
      DequantizeRow(format, blocks.data(), cols, back.data());
      for (int64_t b = 0; b < cols / kQuantBlock; ++b) {
        const auto first = row.begin() + b * kQuantBlock, last = first + kQuantBlock;
        const float lo = *std::min_element(first, last), hi = *std::max_element(first, last);
        const float amax = std::max(-lo, hi);
        // A step is max|w| / 127 (int8) or (max - min) / 15 (int4), itself rounded to f16
        // (a relative 2^-11), as is int4's offset; the ends may clamp by that rounding.
        const float step = format == DType::kInt8 ? amax / 127.0f : (hi - lo) / 15.0f;
        const float slack = 0.5f * step + 2.0f * amax * std::ldexp(1.0f, -11);
        for (int64_t i = b * kQuantBlock; i < (b + 1) * kQuantBlock; ++i) {
          EXPECT_NEAR(back[i], row[i], slack) << DTypeName(format) << " spread " << spread;
        }
      }
    }
  }
}

TEST(CpuQuantizeTest, RowsAreLaidOutAsDocumented) {
  // Two blocks: values -4..11 twice over (a block of steps of 1 from -4), then their doubles.
  std::vector<float> row(2 * kQuantBlock);
  for (int64_t i = 0; i < 2 * kQuantBlock; ++i) {
    row[i] = (static_cast<float>(i % 16) - 4.0f) * (i < kQuantBlock ? 1.0f : 2.0f);
  }
  std::vector<unsigned char> int8(RowBytes(DType::kInt8, 2 * kQuantBlock));
  ASSERT_EQ(int8.size(), 2u * (2 + kQuantBlock));
  ASSERT_TRUE(QuantizeRow(DType::kInt8, row.data(), 2 * kQuantBlock, int8.data()));
  uint16_t scales[2];
  std::memcpy(scales, int8.data(), sizeof(scales));  // the scales come first
  EXPECT_EQ(F16ToFloat(scales[0]), F16ToFloat(FloatToF16(11.0f / 127.0f)));
  EXPECT_EQ(F16ToFloat(scales[1]), F16ToFloat(FloatToF16(22.0f / 127.0f)));
  const auto* q8 = reinterpret_cast<const int8_t*>(int8.data() + sizeof(scales));
  EXPECT_EQ(q8[15], 127);                // 11, block 0's largest magnitude
  EXPECT_EQ(q8[kQuantBlock + 15], 127);  // 22, block 1's
  EXPECT_EQ(q8[4], 0);

  std::vector<unsigned char> int4(RowBytes(DType::kInt4, 2 * kQuantBlock));
  ASSERT_EQ(int4.size(), 2u * (4 + kQuantBlock / 2));
  ASSERT_TRUE(QuantizeRow(DType::kInt4, row.data(), 2 * kQuantBlock, int4.data()));
  uint16_t scales_and_offsets[4];  // scales, then offsets
  std::memcpy(scales_and_offsets, int4.data(), sizeof(scales_and_offsets));
  EXPECT_EQ(F16ToFloat(scales_and_offsets[0]), 1.0f);
  EXPECT_EQ(F16ToFloat(scales_and_offsets[1]), 2.0f);
  EXPECT_EQ(F16ToFloat(scales_and_offsets[2]), -4.0f);
  EXPECT_EQ(F16ToFloat(scales_and_offsets[3]), -8.0f);
  const unsigned char* q4 = int4.data() + sizeof(scales_and_offsets);
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t j = 0; j < kQuantBlock / 2; ++j) {
      EXPECT_EQ(q4[b * 16 + j] & 15, j) << j;  // weight j, low nibble
      EXPECT_EQ(q4[b * 16 + j] >> 4, j) << j;  // weight j + 16, high nibble
    }
  }
}

TEST(CpuQuantizeTest, ValuesAFormatCannotHoldAreRefused) {
  for (float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), 1e30f}) {
    std::vector<float> row = RandomRow(2 * kQuantBlock, 1.0f, 5);
    row[kQuantBlock + 3] = bad;
    for (DType format : {DType::kInt8, DType::kInt4}) {
      std::vector<unsigned char> blocks(RowBytes(format, row.size()));
      EXPECT_FALSE(QuantizeRow(format, row.data(), static_cast<int64_t>(row.size()), blocks.data()))
          << DTypeName(format) << " " << bad;
    }
  }
}

TEST(CpuQuantizeTest, ActivationsQuantizeWithinHalfAStepWithTheirBlockSums) {
  const int64_t rows = 3, in = 3 * kQuantBlock;
  std::vector<float> x = RandomRow(rows * in, 2.0f, 8);
  x[5] = std::numeric_limits<float>::quiet_NaN();                // block 0 of row 0
  x[in + kQuantBlock] = std::numeric_limits<float>::infinity();  // block 1 of row 1
  QuantizedActivations out;
  ResizeActivations(rows, in, out);
  QuantizeActivationRows(x.data(), 0, 2, out);
  QuantizeActivationRows(x.data(), 2, 1, out);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < out.blocks_per_row(); ++b) {
      const float scale = out.scales[r * out.blocks_per_row() + b];
      int32_t sum = 0;
      for (int64_t i = 0; i < kQuantBlock; ++i) {
        const int64_t at = r * in + b * kQuantBlock + i;
        EXPECT_GE(out.q[at], -127);
        sum += out.q[at];
        if (std::isfinite(x[at]) && std::isfinite(scale)) {
          EXPECT_NEAR(static_cast<float>(out.q[at]) * scale, x[at], 0.5f * scale + 1e-6f);
        }
      }
      if (std::isfinite(scale)) {
        EXPECT_EQ(out.sums[r * out.blocks_per_row() + b], scale * static_cast<float>(sum));
        EXPECT_EQ(out.q_sums[r * out.blocks_per_row() + b], sum);
      }
    }
  }
  // The infinite block quantizes to zeros rather than to anything undefined.
  for (int64_t i = 0; i < kQuantBlock; ++i) EXPECT_EQ(out.q[in + kQuantBlock + i], 0);
}

}  // namespace
}  // namespace kvd::kernels::cpu
