// The CUDA backend's TopLogits against the CPU reference on rows of a Llama 3 vocabulary: fresh
// random logits with planted ties across the k-th place, -inf entries (a third of a row, all but
// ten, all of it), ±0, rows of one value, for batches of 1, 64 and 65 rows and k from 1 to
// kMaxTopLogits. Ids and values must match exactly, normalizers to 1e-5. Skipped without a
// device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "tests/gpu/backend_pair.h"

namespace kvd::kernels {
namespace {

constexpr int64_t kVocab = 128256;
constexpr float kInf = std::numeric_limits<float>::infinity();
// Ties planted per row, at ids spread over the whole row.
constexpr int64_t kPlantedTies = 100;
constexpr int64_t kTieSpacing = 1283;

struct TopResults {
  std::vector<float> values;
  std::vector<int32_t> ids;
  std::vector<float> log_normalizers;
};

class CudaTopLogitsTest : public BackendPairTest,
                          public ::testing::WithParamInterface<std::tuple<int64_t, int32_t>> {
 protected:
  // Sets kPlantedTies entries of the row to its value at place k − k / 4 (from 1), so that ties
  // reach past the k-th place: a quarter of k of them are inside, the rest outside.
  static void PlantTies(float* row, int32_t k) {
    std::vector<float> sorted(row, row + kVocab);
    const auto place = sorted.begin() + (k - 1 - k / 4);
    std::nth_element(sorted.begin(), place, sorted.end(), std::greater<float>());
    for (int64_t i = 0; i < kPlantedTies; ++i) row[i * kTieSpacing + 7] = *place;
  }

  // Row r is one of five kinds, by r % 5: random with ties; the same with every third entry
  // -inf and some ±0; ten finite entries and -inf elsewhere; one value throughout; all -inf.
  std::vector<float> MakeLogits(int64_t rows, int32_t k) {
    std::vector<float> logits = Random(static_cast<size_t>(rows * kVocab), 3.0f);
    for (int64_t r = 0; r < rows; ++r) {
      float* row = logits.data() + r * kVocab;
      switch (r % 5) {
        case 0:
          PlantTies(row, k);
          break;
        case 1:
          for (int64_t j = 0; j < kVocab; j += 3) row[j] = -kInf;
          for (int64_t j = 1; j < kVocab; j += 501) row[j] = (j / 501) % 2 == 0 ? 0.0f : -0.0f;
          PlantTies(row, k);
          break;
        case 2: {
          const std::vector<float> finite(row, row + 10);
          std::fill(row, row + kVocab, -kInf);
          for (int64_t i = 0; i < 10; ++i) row[i * (kVocab / 10) + 5] = finite[i];
          break;
        }
        case 3:
          std::fill(row, row + kVocab, 1.5f);
          break;
        case 4:
          std::fill(row, row + kVocab, -kInf);
          break;
      }
    }
    return logits;
  }

  static TopResults Run(Backend& backend, const std::vector<float>& logits, int64_t rows, int32_t k,
                        const std::vector<float>& inverse_temperatures) {
    const DeviceTensor tensor = Put(backend, logits, rows, kVocab);
    TopResults out;
    out.values.resize(static_cast<size_t>(rows) * k);
    out.ids.resize(out.values.size());
    out.log_normalizers.resize(2 * static_cast<size_t>(rows));
    backend.TopLogits(tensor.tensor, k, inverse_temperatures, out.values.data(), out.ids.data(),
                      out.log_normalizers.data());
    return out;
  }
};

TEST_P(CudaTopLogitsTest, MatchesTheCpu) {
  const auto [rows, k] = GetParam();
  const std::vector<float> logits = MakeLogits(rows, k);
  std::vector<float> inverse_temperatures(static_cast<size_t>(rows));
  const float cycle[] = {2.0f, 1.0f, 0.5f};
  for (int64_t r = 0; r < rows; ++r) inverse_temperatures[r] = cycle[r % 3];
  const TopResults expected = Run(*cpu_, logits, rows, k, inverse_temperatures);
  const TopResults actual = Run(*cuda_, logits, rows, k, inverse_temperatures);
  ASSERT_TRUE(cuda_->TakeError().ok());
  for (int64_t r = 0; r < rows; ++r) {
    for (int32_t i = 0; i < k; ++i) {
      const size_t at = static_cast<size_t>(r) * k + i;
      ASSERT_EQ(actual.ids[at], expected.ids[at])
          << "row " << r << " place " << i << " seed " << seed_;
      // Copies of a logit: the same bits, -0 included.
      ASSERT_EQ(std::signbit(actual.values[at]), std::signbit(expected.values[at]));
      ASSERT_EQ(actual.values[at], expected.values[at]) << "row " << r << " place " << i;
    }
    for (int32_t n = 0; n < 2; ++n) {
      const float want = expected.log_normalizers[2 * r + n];
      const float got = actual.log_normalizers[2 * r + n];
      if (std::isinf(want)) {
        EXPECT_EQ(got, want) << "row " << r << " normalizer " << n;
      } else {
        // Relative to the normalizer, or absolute where it is within 1 of 0.
        EXPECT_LE(std::abs(got - want), 1e-5 * std::max(1.0f, std::abs(want)))
            << "row " << r << " normalizer " << n << " seed " << seed_;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RowsAndK, CudaTopLogitsTest,
                         ::testing::Combine(::testing::Values<int64_t>(1, 64, 65),
                                            ::testing::Values<int32_t>(1, 20, 64, kMaxTopLogits)),
                         [](const auto& info) {
                           return "rows" + std::to_string(std::get<0>(info.param)) + "_k" +
                                  std::to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace kvd::kernels
