// The CUDA backend's TopLogits against the CPU reference on rows of a Llama 3 vocabulary: fresh
// random logits with planted ties across the k-th place, -inf entries (a third of a row, all but
// ten, all of it), ±0, rows of one value, for batches of 1, 64 and 65 rows and k from 1 to
// kMaxTopLogits. Ids and values must match exactly, normalizers to 1e-5. Skipped without a
// device.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "tests/gpu/backend_pair.h"
#include "tests/support/logit_rows.h"

namespace kvd::kernels {
namespace {

constexpr int64_t kVocab = 128256;
// 100 ties planted per row, at ids spread over the whole row.
constexpr LogitRowLayout kRowLayout{.planted_ties = 100, .tie_spacing = 1283, .zero_spacing = 501};

class CudaTopLogitsTest : public BackendPairTest,
                          public ::testing::WithParamInterface<std::tuple<int64_t, int32_t>> {
 protected:
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
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const std::vector<float> logits = MakeLogitRows(random_, rows, kVocab, k, kRowLayout);
  const std::vector<float> inverse_temperatures = CycledInverseTemperatures(rows);
  const TopResults expected = Run(*cpu_, logits, rows, k, inverse_temperatures);
  const TopResults actual = Run(*cuda_, logits, rows, k, inverse_temperatures);
  ASSERT_TRUE(cuda_->TakeError().ok());
  ExpectSameTopResults(actual, expected, rows, k);
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
