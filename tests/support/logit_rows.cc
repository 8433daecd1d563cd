// Rows of logits for the top-logits tests and the check of a selection.
#include "tests/support/logit_rows.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <span>

#include "tests/support/kernel_test_values.h"

namespace kvd::kernels {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

void PlantTies(std::span<float> row, int32_t k, const LogitRowLayout& layout) {
  std::vector<float> sorted(row.begin(), row.end());
  const auto place = sorted.begin() + (k - 1 - k / 4);
  std::nth_element(sorted.begin(), place, sorted.end(), std::greater<float>());
  for (int64_t i = 0; i < layout.planted_ties; ++i) row[i * layout.tie_spacing + 7] = *place;
}

}  // namespace

std::vector<float> MakeLogitRows(std::mt19937& random, int64_t rows, int64_t vocab, int32_t k,
                                 const LogitRowLayout& layout) {
  std::vector<float> logits = RandomNormals(random, static_cast<size_t>(rows * vocab), 3.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const std::span<float> row(logits.data() + r * vocab, static_cast<size_t>(vocab));
    switch (r % 5) {
      case 0:
        PlantTies(row, k, layout);
        break;
      case 1:
        for (int64_t j = 0; j < vocab; j += 3) row[j] = -kInf;
        for (int64_t j = 1; j < vocab; j += layout.zero_spacing) {
          row[j] = (j / layout.zero_spacing) % 2 == 0 ? 0.0f : -0.0f;
        }
        PlantTies(row, k, layout);
        break;
      case 2: {
        const std::vector<float> finite(row.begin(), row.begin() + 10);
        std::fill(row.begin(), row.end(), -kInf);
        for (int64_t i = 0; i < 10; ++i) row[i * (vocab / 10) + 5] = finite[i];
        break;
      }
      case 3:
        std::fill(row.begin(), row.end(), 1.5f);
        break;
      case 4:
        std::fill(row.begin(), row.end(), -kInf);
        break;
    }
  }
  return logits;
}

std::vector<float> CycledInverseTemperatures(int64_t rows) {
  std::vector<float> inverse_temperatures(static_cast<size_t>(rows));
  const float cycle[] = {2.0f, 1.0f, 0.5f};
  for (int64_t r = 0; r < rows; ++r) inverse_temperatures[r] = cycle[r % 3];
  return inverse_temperatures;
}

void ExpectSameTopResults(const TopResults& actual, const TopResults& expected, int64_t rows,
                          int32_t k) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int32_t i = 0; i < k; ++i) {
      const size_t at = static_cast<size_t>(r) * k + i;
      ASSERT_EQ(actual.ids[at], expected.ids[at]) << "row " << r << " place " << i;
      // Copies of a logit: the same bits, -0 included.
      ASSERT_EQ(std::bit_cast<uint32_t>(actual.values[at]),
                std::bit_cast<uint32_t>(expected.values[at]))
          << "row " << r << " place " << i;
    }
    for (int32_t n = 0; n < 2; ++n) {
      const float want = expected.log_normalizers[2 * r + n];
      const float got = actual.log_normalizers[2 * r + n];
      if (std::isinf(want)) {
        EXPECT_EQ(got, want) << "row " << r << " normalizer " << n;
      } else {
        // Relative to the normalizer, or absolute where it is within 1 of 0. A kernel sums expf
        // of floats (the device's within 2 ulp), the reference exp of doubles.
        EXPECT_LE(std::abs(got - want), 1e-5 * std::max(1.0f, std::abs(want)))
            << "row " << r << " normalizer " << n;
      }
    }
  }
}

}  // namespace kvd::kernels
