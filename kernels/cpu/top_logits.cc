#include "kernels/cpu/top_logits.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "kernels/cpu/exp_sum.h"

namespace kvd::kernels::cpu {
namespace {

// log Σ_j exp((row[j] − max) * scale).
float LogNormalizer(const float* row, int64_t vocab, float max, float scale) {
  if (max == -std::numeric_limits<float>::infinity()) return max;
  static const ExpSumKernel exp_sum = FastestExpSum(HostCpuFeatures());
  return static_cast<float>(std::log(exp_sum(row, vocab, max, scale)));
}

}  // namespace

void SelectTopLogits(const Tensor& logits, int32_t k, std::span<const float> inverse_temperatures,
                     float* values, int32_t* ids, float* log_normalizers, ThreadPool& threads) {
  const int64_t vocab = logits.cols;
  threads.ParallelFor(logits.rows, [&](int64_t row_begin, int64_t row_end) {
    std::vector<int32_t> order(static_cast<size_t>(vocab));
    for (int64_t r = row_begin; r < row_end; ++r) {
      const float* row = logits.f32() + r * vocab;
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [row](int32_t a, int32_t b) {
        return row[a] > row[b] || (row[a] == row[b] && a < b);
      });
      for (int32_t i = 0; i < k; ++i) {
        values[r * k + i] = row[order[i]];
        ids[r * k + i] = order[i];
      }
      const float max = row[order[0]];
      log_normalizers[2 * r] = LogNormalizer(row, vocab, max, 1.0f);
      log_normalizers[2 * r + 1] = LogNormalizer(row, vocab, max, inverse_temperatures[r]);
    }
  });
}

}  // namespace kvd::kernels::cpu
