// The CUDA backend's TopLogits kernel (kernels/cuda/top_logits_kernels.cuh) run on the CPU through
// the CUDA emulation, against the CPU reference: random rows with planted ties across the k-th
// place, -inf entries (every third, all but ten, all), ±0 and rows of one value, for k of 1, 20
// and kMaxTopLogits over a vocabulary smaller than the block, one of a few thousand, and rows of
// Llama 3's. Ids and values must match exactly, normalizers to 1e-5. Needs no device.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cpu/top_logits.h"
#include "tests/support/logit_rows.h"
#include "tests/unit/kernels/cuda_emulation/top_logits_launch.h"

namespace kvd::kernels::cuda {
namespace {

constexpr int32_t kLlama3Vocab = 128256;
// Ties planted per row, at ids spread over the whole row.
constexpr int64_t kPlantedTies = 40;

class CudaTopLogitsKernelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    random_.seed(seed_);
  }

  std::vector<float> MakeLogits(int32_t rows, int32_t vocab, int32_t k) {
    return MakeLogitRows(
        random_, rows, vocab, k,
        {.planted_ties = kPlantedTies, .tie_spacing = vocab / kPlantedTies, .zero_spacing = 31});
  }

  // Runs the reference and the emulated kernel on `rows` rows of `vocab` logits and compares.
  void ExpectSameTopLogits(const std::vector<float>& logits, int32_t rows, int32_t vocab,
                           int32_t k) {
    SCOPED_TRACE("vocab " + std::to_string(vocab) + " k " + std::to_string(k) + " seed " +
                 std::to_string(seed_));
    const std::vector<float> inverse_temperatures = CycledInverseTemperatures(rows);
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
    ExpectSameTopResults(actual, expected, rows, k);
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
