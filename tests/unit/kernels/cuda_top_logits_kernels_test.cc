// The CUDA backend's TopLogits kernel (kernels/cuda/top_logits_kernels.cuh) run on the CPU through
// the CUDA emulation, against the CPU reference: random rows with planted ties across the k-th
// place, -inf entries (every third, all but ten, all), ±0 and rows of one value, for k of 1, 20
// and kMaxTopLogits over a vocabulary smaller than the block, one of a few thousand, and rows of
// Llama 3's. Ids and values must match exactly, normalizers to 1e-5. Needs no device.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cpu/top_logits.h"
#include "tests/unit/kernels/cuda_emulation/top_logits_launch.h"

namespace kvd::kernels::cuda {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int32_t kLlama3Vocab = 128256;
// Ties planted per row, at ids spread over the whole row.
constexpr int32_t kPlantedTies = 40;

struct TopResults {
  std::vector<float> values;
  std::vector<int32_t> ids;
  std::vector<float> log_normalizers;
};

class CudaTopLogitsKernelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    random_.seed(seed_);
  }

  // Sets kPlantedTies entries of the row to its value at place k − k / 4 (from 1), so that ties
  // reach past the k-th place: a quarter of k of them inside, the rest outside.
  static void PlantTies(std::span<float> row, int32_t k) {
    std::vector<float> sorted(row.begin(), row.end());
    const auto place = sorted.begin() + (k - 1 - k / 4);
    std::nth_element(sorted.begin(), place, sorted.end(), std::greater<float>());
    const size_t spacing = row.size() / kPlantedTies;
    for (size_t i = 0; i < kPlantedTies; ++i) row[i * spacing + 7] = *place;
  }

  // Row r is one of five kinds, by r % 5: random with ties; the same with every third entry
  // -inf and some ±0; ten finite entries and -inf elsewhere; one value throughout; all -inf.
  std::vector<float> MakeLogits(int32_t rows, int32_t vocab, int32_t k) {
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> logits(static_cast<size_t>(rows) * vocab);
    for (float& x : logits) x = normal(random_);
    for (int32_t r = 0; r < rows; ++r) {
      const std::span<float> row(logits.data() + static_cast<size_t>(r) * vocab, vocab);
      switch (r % 5) {
        case 0:
          PlantTies(row, k);
          break;
        case 1:
          for (int32_t j = 0; j < vocab; j += 3) row[j] = -kInf;
          for (int32_t j = 1; j < vocab; j += 31) row[j] = (j / 31) % 2 == 0 ? 0.0f : -0.0f;
          PlantTies(row, k);
          break;
        case 2: {
          const std::vector<float> finite(row.begin(), row.begin() + 10);
          std::fill(row.begin(), row.end(), -kInf);
          for (int32_t i = 0; i < 10; ++i) row[i * (vocab / 10) + 5] = finite[i];
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

  // Runs the reference and the emulated kernel on `rows` rows of `vocab` logits and compares.
  void ExpectSameTopLogits(const std::vector<float>& logits, int32_t rows, int32_t vocab,
                           int32_t k) {
    SCOPED_TRACE("vocab " + std::to_string(vocab) + " k " + std::to_string(k) + " seed " +
                 std::to_string(seed_));
    std::vector<float> inverse_temperatures(rows);
    const float cycle[] = {2.0f, 1.0f, 0.5f};
    for (int32_t r = 0; r < rows; ++r) inverse_temperatures[r] = cycle[r % 3];
    const auto results = [&] {
      TopResults out;
      out.values.assign(static_cast<size_t>(rows) * k, std::numeric_limits<float>::quiet_NaN());
      out.ids.assign(out.values.size(), -1);
      out.log_normalizers.assign(2 * static_cast<size_t>(rows),
                                 std::numeric_limits<float>::quiet_NaN());
      return out;
    };
    TopResults expected = results(), actual = results();
    cpu::ThreadPool threads(1);
    cpu::SelectTopLogits(Tensor{const_cast<float*>(logits.data()), DType::kF32, rows, vocab}, k,
                         inverse_temperatures, expected.values.data(), expected.ids.data(),
                         expected.log_normalizers.data(), threads);
    const absl::Status status = emulation::EmulateTopLogits(
        logits.data(), rows, vocab, k, inverse_temperatures.data(), actual.values.data(),
        actual.ids.data(), actual.log_normalizers.data());
    ASSERT_TRUE(status.ok()) << status;
    for (int32_t r = 0; r < rows; ++r) {
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
          // Relative to the normalizer, or absolute where it is within 1 of 0. The kernel sums
          // expf of floats (the device's within 2 ulp), the reference exp of doubles.
          EXPECT_LE(std::abs(got - want), 1e-5 * std::max(1.0f, std::abs(want)))
              << "row " << r << " normalizer " << n;
        }
      }
    }
  }

  uint32_t seed_ = 0;
  std::mt19937 random_;
};

TEST_F(CudaTopLogitsKernelsTest, RowsOfEveryKindMatchTheCpu) {
  // 300 entries leave most of the block's threads without one; 3001 take three passes and a
  // part of the block's width per pass.
  for (int32_t vocab : {300, 3001}) {
    for (int32_t k : {1, 20, kMaxTopLogits}) {
      constexpr int32_t kRows = 5;
      ExpectSameTopLogits(MakeLogits(kRows, vocab, k), kRows, vocab, k);
    }
  }
}

TEST_F(CudaTopLogitsKernelsTest, RowsOfLlama3sVocabularyMatchTheCpu) {
  // The first two kinds: random with ties, and the same with -inf and ±0 entries.
  for (int32_t k : {1, kMaxTopLogits}) {
    constexpr int32_t kRows = 2;
    ExpectSameTopLogits(MakeLogits(kRows, kLlama3Vocab, k), kRows, kLlama3Vocab, k);
  }
}

}  // namespace
}  // namespace kvd::kernels::cuda
