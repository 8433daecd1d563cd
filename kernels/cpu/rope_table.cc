#include "kernels/cpu/rope_table.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace kvd::kernels::cpu {
namespace {

// Rows are split across threads only when each thread gets at least this many angles (a cosine
// and a sine each, some tens of nanoseconds), or elements to rotate.
constexpr int64_t kMinAnglesPerTask = 1 << 10;
constexpr int64_t kMinElementsPerTask = 1 << 14;

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

void RopeTable::Rotate(Tensor x, int32_t num_heads, ThreadPool& threads) const {
  const int64_t head_dim = 2 * half_;
  KVD_CHECK(x.rows == std::ssize(positions_) && x.cols == num_heads * head_dim);
  const int64_t grain = std::max<int64_t>(1, kMinElementsPerTask / std::max<int64_t>(x.cols, 1));
  threads.ParallelFor((x.rows + grain - 1) / grain, [&](int64_t task_begin, int64_t task_end) {
    for (int64_t row = task_begin * grain; row < std::min(x.rows, task_end * grain); ++row) {
      const float* cos = cos_.data() + row * half_;
      const float* sin = sin_.data() + row * half_;
      for (int32_t head = 0; head < num_heads; ++head) {
        float* h = x.f32() + row * x.cols + head * head_dim;
        for (int64_t i = 0; i < half_; ++i) {
          const float first = h[i];
          const float second = h[i + half_];
          h[i] = first * cos[i] - second * sin[i];
          h[i + half_] = second * cos[i] + first * sin[i];
        }
      }
    }
  });
}

}  // namespace kvd::kernels::cpu
