// The CPU backend's TopLogits against a full sort of each row and its sums in long double:
// random rows, ties, -inf entries, k from 1 to the whole vocabulary, several temperatures, and
// single rows long enough to be cut into slices over the threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_backend.h"

namespace kvd::kernels::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

struct TopResults {
  std::vector<float> values;
  std::vector<int32_t> ids;
  std::vector<float> log_normalizers;
};

// log Σ exp((row[j] − max) * scale) straight from the definition.
float DirectLogNormalizer(const float* row, int64_t vocab, float scale) {
  const float max = *std::max_element(row, row + vocab);
  if (max == -kInf) return -kInf;
  long double sum = 0.0L;
  for (int64_t j = 0; j < vocab; ++j) {
    sum += std::exp((static_cast<long double>(row[j]) - max) * scale);
  }
  return static_cast<float>(std::log(sum));
}

// Every row sorted in full, larger first and lower id first among equals.
TopResults FullSort(const std::vector<float>& logits, int64_t rows, int64_t vocab, int32_t k,
                    const std::vector<float>& inverse_temperatures) {
  TopResults out;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = logits.data() + r * vocab;
    std::vector<int32_t> order(static_cast<size_t>(vocab));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [row](int32_t a, int32_t b) { return row[a] > row[b]; });
    for (int32_t i = 0; i < k; ++i) {
      out.values.push_back(row[order[i]]);
      out.ids.push_back(order[i]);
    }
    out.log_normalizers.push_back(DirectLogNormalizer(row, vocab, 1.0f));
    out.log_normalizers.push_back(DirectLogNormalizer(row, vocab, inverse_temperatures[r]));
  }
  return out;
}

class TopLogitsTest : public ::testing::Test {
 protected:
  std::vector<float> Normal(size_t n, float scale) {
    std::normal_distribution<float> normal(0.0f, scale);
    std::vector<float> values(n);
    for (float& x : values) x = normal(random_);
    return values;
  }

  // Inverse temperatures 2, 1 and 0.5 in turn.
  static std::vector<float> InverseTemperatures(int64_t rows) {
    const float cycle[] = {2.0f, 1.0f, 0.5f};
    std::vector<float> out(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) out[r] = cycle[r % 3];
    return out;
  }

  TopResults Run(std::vector<float>& logits, int64_t rows, int64_t vocab, int32_t k,
                 const std::vector<float>& inverse_temperatures) {
    TopResults out;
    out.values.resize(static_cast<size_t>(rows) * k);
    out.ids.resize(out.values.size());
    out.log_normalizers.resize(2 * static_cast<size_t>(rows));
    backend_.TopLogits(Tensor{logits.data(), DType::kF32, rows, vocab}, k, inverse_temperatures,
                       out.values.data(), out.ids.data(), out.log_normalizers.data());
    return out;
  }

  void ExpectLikeFullSort(std::vector<float> logits, int64_t rows, int64_t vocab, int32_t k) {
    const std::vector<float> inverse_temperatures = InverseTemperatures(rows);
    const TopResults expected = FullSort(logits, rows, vocab, k, inverse_temperatures);
    const TopResults actual = Run(logits, rows, vocab, k, inverse_temperatures);
    EXPECT_EQ(actual.ids, expected.ids) << "k " << k << " vocab " << vocab;
    EXPECT_EQ(actual.values, expected.values) << "k " << k << " vocab " << vocab;
    for (size_t i = 0; i < expected.log_normalizers.size(); ++i) {
      const float want = expected.log_normalizers[i];
      if (std::isinf(want)) {
        EXPECT_EQ(actual.log_normalizers[i], want) << "normalizer " << i;
      } else {
        EXPECT_NEAR(actual.log_normalizers[i], want, 1e-6 * std::max(1.0f, std::abs(want)))
            << "normalizer " << i;
      }
    }
  }

  CpuBackend backend_{BackendOptions{.num_threads = 2}};
  std::mt19937 random_{7};
};

TEST_F(TopLogitsTest, RandomRowsMatchAFullSort) {
  constexpr int64_t kRows = 9, kVocab = 1000;
  for (int32_t k : {1, 20, 64, 256})
    ExpectLikeFullSort(Normal(kRows * kVocab, 3.0f), kRows, kVocab, k);
}

TEST_F(TopLogitsTest, LargeLogitsKeepTheirNormalizersPrecise) {
  constexpr int64_t kRows = 4, kVocab = 1000;
  std::vector<float> logits = Normal(kRows * kVocab, 2.0f);
  for (float& x : logits) x += 5000.0f;  // the normalizers stay relative to each row's max
  ExpectLikeFullSort(logits, kRows, kVocab, 20);
}

TEST_F(TopLogitsTest, KCanBeTheWholeVocabulary) {
  constexpr int64_t kRows = 3, kVocab = 50;
  ExpectLikeFullSort(Normal(kRows * kVocab, 1.0f), kRows, kVocab, kVocab);
}

TEST_F(TopLogitsTest, EqualValuesComeLowerIdFirst) {
  constexpr int64_t kRows = 4, kVocab = 300;
  const float levels[] = {-1.0f, -0.0f, 0.0f, 0.5f, 2.0f};
  std::vector<float> logits(kRows * kVocab);
  for (float& x : logits) x = levels[random_() % 5];
  for (int32_t k : {1, 37, 128, 256}) ExpectLikeFullSort(logits, kRows, kVocab, k);

  const std::vector<float> inverse_temperatures = InverseTemperatures(kRows);
  const TopResults top = Run(logits, kRows, kVocab, 256, inverse_temperatures);
  for (int64_t r = 0; r < kRows; ++r) {
    for (int32_t i = 1; i < 256; ++i) {
      const size_t at = r * 256 + i;
      ASSERT_GE(top.values[at - 1], top.values[at]);
      if (top.values[at - 1] == top.values[at]) {
        ASSERT_LT(top.ids[at - 1], top.ids[at]);
      }
    }
  }
}

TEST_F(TopLogitsTest, NegativeInfinityCountsForNothing) {
  constexpr int64_t kRows = 3, kVocab = 100;
  std::vector<float> logits = Normal(kRows * kVocab, 1.0f);
  // Row 0: 10 finite logits, so k = 20 reaches into the -inf ones; row 2: nothing finite.
  for (int64_t j = 10; j < kVocab; ++j) logits[j] = -kInf;
  for (int64_t j = 0; j < kVocab; j += 3) logits[kVocab + j] = -kInf;
  for (int64_t j = 0; j < kVocab; ++j) logits[2 * kVocab + j] = -kInf;
  ExpectLikeFullSort(logits, kRows, kVocab, 20);

  const TopResults top = Run(logits, kRows, kVocab, 20, InverseTemperatures(kRows));
  EXPECT_EQ(top.ids[10], 10);  // the first -inf, by id
  EXPECT_EQ(top.log_normalizers[4], -kInf);
  EXPECT_EQ(top.log_normalizers[5], -kInf);
}

TEST_F(TopLogitsTest, FullVocabularyRow) {
  constexpr int64_t kVocab = 128256;
  std::vector<float> logits = Normal(kVocab, 4.0f);
  // 129 copies of the 200th largest value, so that the ties straddle the 256th place.
  std::vector<float> sorted = logits;
  std::nth_element(sorted.begin(), sorted.begin() + 199, sorted.end(), std::greater<float>());
  for (int64_t j = 0; j < kVocab; j += 1000) logits[j] = sorted[199];
  ExpectLikeFullSort(logits, 1, kVocab, 256);
}

TEST_F(TopLogitsTest, ARowCutIntoSlicesMergesThem) {
  // One row of 40,000 entries is cut into one slice a thread (two here).
  constexpr int64_t kVocab = 40000;
  const float levels[] = {-1.0f, 0.0f, 2.0f};
  std::vector<float> ties(kVocab);
  for (float& x : ties) x = levels[random_() % 3];
  ExpectLikeFullSort(ties, 1, kVocab, 256);  // equal values on both sides of the cut

  std::vector<float> first_half_empty = Normal(kVocab, 2.0f);
  std::fill(first_half_empty.begin(), first_half_empty.begin() + kVocab / 2, -kInf);
  ExpectLikeFullSort(first_half_empty, 1, kVocab, 256);

  std::vector<float> one_finite(kVocab, -kInf);
  one_finite[kVocab - 3] = 4.0f;
  ExpectLikeFullSort(one_finite, 1, kVocab, 8);

  std::vector<float> largest_in_each_half = Normal(kVocab, 1.0f);
  largest_in_each_half[100] = 30.0f;
  largest_in_each_half[kVocab - 100] = 20.0f;
  ExpectLikeFullSort(largest_in_each_half, 1, kVocab, 4);
}

}  // namespace
}  // namespace kvd::kernels::cpu
