#include "kernels/cpu/rope_table.h"

#include <algorithm>
#include <cmath>

namespace kvd::kernels::cpu {
namespace {

// Rows are split across threads only when each thread gets at least this many angles (a cosine
// and a sine each, some tens of nanoseconds).
constexpr int64_t kMinAnglesPerTask = 1 << 10;

}  // namespace

void RopeTable::Update(std::span<const int32_t> positions, std::span<const float> inv_freq,
                       ThreadPool& threads) {
  if (std::ranges::equal(positions, positions_) && std::ranges::equal(inv_freq, inv_freq_)) {
    return;
  }
  positions_.assign(positions.begin(), positions.end());
  inv_freq_.assign(inv_freq.begin(), inv_freq.end());
  half_ = std::ssize(inv_freq);
  cos_.resize(positions.size() * inv_freq.size());
  sin_.resize(cos_.size());
  const int64_t rows = std::ssize(positions);
  const int64_t grain = std::max<int64_t>(1, kMinAnglesPerTask / std::max<int64_t>(half_, 1));
  threads.ParallelFor((rows + grain - 1) / grain, [&](int64_t task_begin, int64_t task_end) {
    for (int64_t row = task_begin * grain; row < std::min(rows, task_end * grain); ++row) {
      for (int64_t i = 0; i < half_; ++i) {
        const float angle = static_cast<float>(positions_[row]) * inv_freq_[i];
        cos_[row * half_ + i] = std::cos(angle);
        sin_[row * half_ + i] = std::sin(angle);
      }
    }
  });
}

}  // namespace kvd::kernels::cpu
