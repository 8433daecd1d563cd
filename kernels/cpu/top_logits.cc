#include "kernels/cpu/top_logits.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/exp_sum.h"
#include "kernels/cpu/first_above.h"
#include "kernels/cpu/kernel_table.h"

namespace kvd::kernels::cpu {
namespace {

// With fewer rows than threads, a row is cut into slices of at least this many entries, so
// that a small batch's selection and sums run on every thread.
constexpr int64_t kMinSliceEntries = 16384;
static_assert(kMinSliceEntries >= kMaxTopLogits, "a slice holds at least k entries");

struct Candidate {
  float value;
  int32_t id;
};

// The output order: larger values first, the lower id first among equals.
bool Before(const Candidate& a, const Candidate& b) {
  return a.value > b.value || (a.value == b.value && a.id < b.id);
}

// What one slice of a row contributes: its k best entries (in no order), its largest logit m,
// and its sums of exp((logit − m) · scale) at scale 1 and at the row's inverse temperature (no
// terms where m is -inf).
struct SliceTop {
  std::vector<Candidate> best;
  float max = 0.0f;
  double sum = 0.0;
  double sum_at_temperature = 0.0;
};

// The candidates a slice's selection holds, in units of k, before it cuts them back to the k
// best: each cut then takes a few compares per candidate it admitted.
constexpr int64_t kHeldPerK = 4;

// The k best entries of row[begin, end), in no order. Entries are scanned in order, and one
// enters the candidates only if it beats the worst of the k best kept at the last cut (one equal
// to it comes later, so it loses).
void SelectBest(const float* row, int64_t begin, int64_t end, int32_t k,
                std::vector<Candidate>& best) {
  const FirstAboveKernel first_above = HostKernels().first_above.kernel;
  const auto keep_best = [&] {
    std::nth_element(best.begin(), best.begin() + (k - 1), best.end(), Before);
    best.resize(static_cast<size_t>(k));
    return best.back().value;
  };
  best.clear();
  const int64_t filled = std::min<int64_t>(end, begin + k);
  for (int64_t j = begin; j < filled; ++j) best.push_back({row[j], static_cast<int32_t>(j)});
  if (filled < end) {
    float worst_kept = keep_best();
    for (int64_t j = first_above(row, filled, end, worst_kept); j < end;
         j = first_above(row, j + 1, end, worst_kept)) {
      best.push_back({row[j], static_cast<int32_t>(j)});
      if (std::ssize(best) == kHeldPerK * k) worst_kept = keep_best();
    }
    if (std::ssize(best) > k) keep_best();
  }
}

void ScanSlice(const float* row, int64_t begin, int64_t end, int32_t k, float inverse_temperature,
               SliceTop& slice) {
  const ExpSumKernel exp_sum = HostKernels().exp_sum.kernel;
  SelectBest(row, begin, end, k, slice.best);
  slice.max = std::min_element(slice.best.begin(), slice.best.end(), Before)->value;
  if (slice.max == -std::numeric_limits<float>::infinity()) return;
  slice.sum = exp_sum(row + begin, end - begin, slice.max, 1.0f);
  slice.sum_at_temperature = inverse_temperature == 1.0f ? slice.sum
                                                         : exp_sum(row + begin, end - begin,
                                                                   slice.max, inverse_temperature);
}

// log Σ over slices of sum_s · exp((m_s − max) · scale): each slice's sum moved from its own
// largest logit m_s to the row's.
float LogNormalizer(std::span<const SliceTop> slices, float max, float scale,
                    double SliceTop::*sum) {
  if (max == -std::numeric_limits<float>::infinity()) return max;
  double total = 0.0;
  for (const SliceTop& slice : slices) {
    if (slice.max == -std::numeric_limits<float>::infinity()) continue;
    total += slice.*sum * std::exp((double{slice.max} - max) * scale);
  }
  return static_cast<float>(std::log(total));
}

}  // namespace

void SelectTopLogits(const Tensor& logits, int32_t k, std::span<const float> inverse_temperatures,
                     float* values, int32_t* ids, float* log_normalizers, ThreadPool& threads) {
  const int64_t rows = logits.rows;
  const int64_t vocab = logits.cols;
  const int64_t slices_per_row =
      std::clamp<int64_t>(threads.num_threads() / std::max<int64_t>(rows, 1), 1,
                          std::max<int64_t>(vocab / kMinSliceEntries, 1));
  std::vector<SliceTop> slices(static_cast<size_t>(rows * slices_per_row));
  threads.ParallelFor(rows * slices_per_row, [&](int64_t task_begin, int64_t task_end) {
    for (int64_t t = task_begin; t < task_end; ++t) {
      const int64_t r = t / slices_per_row, s = t % slices_per_row;
      ScanSlice(logits.f32() + r * vocab, vocab * s / slices_per_row,
                vocab * (s + 1) / slices_per_row, k, inverse_temperatures[r], slices[t]);
    }
  });
  std::vector<Candidate> merged;
  for (int64_t r = 0; r < rows; ++r) {
    const std::span<const SliceTop> row_slices(slices.data() + r * slices_per_row,
                                               static_cast<size_t>(slices_per_row));
    merged.clear();
    for (const SliceTop& slice : row_slices) {
      merged.insert(merged.end(), slice.best.begin(), slice.best.end());
    }
    // Each slice's best are the row's best within it, so the row's k best are among them.
    std::partial_sort(merged.begin(), merged.begin() + k, merged.end(), Before);
    for (int32_t i = 0; i < k; ++i) {
      values[r * k + i] = merged[i].value;
      ids[r * k + i] = merged[i].id;
    }
    const float max = merged.front().value;
    log_normalizers[2 * r] = LogNormalizer(row_slices, max, 1.0f, &SliceTop::sum);
    log_normalizers[2 * r + 1] =
        LogNormalizer(row_slices, max, inverse_temperatures[r], &SliceTop::sum_at_temperature);
  }
}

}  // namespace kvd::kernels::cpu
