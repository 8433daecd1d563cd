// Rotary position embedding on the CPU, with the cosines and sines of a step's angles (position ×
// inverse frequency) kept from one ApplyRope call to the next: every layer's q and k of a step
// rotate by the same angles, so the CPU backend computes them once a step rather than twice a
// layer.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cpu/thread_pool.h"
#include "kernels/tensor.h"

namespace kvd::kernels::cpu {

class RopeTable {
 public:
  // Makes the table that of `positions` and `inv_freq`, recomputing it (rows over `threads`)
  // only where they differ from the last call's.
  void Update(std::span<const int32_t> positions, std::span<const float> inv_freq,
              ThreadPool& threads);

  // Rotates each head of each row of `x` ([positions, num_heads × 2 × inv_freq], as the last
  // Update's) by its row's angles: the pair (i, i + half) by angle i, over `threads` where the
  // rows are many enough to pay for the hand-off.
  void Rotate(Tensor x, int32_t num_heads, ThreadPool& threads) const;

 private:
  std::vector<int32_t> positions_;
  std::vector<float> inv_freq_;
  int64_t half_ = 0;
  std::vector<float> cos_;
  std::vector<float> sin_;
};

}  // namespace kvd::kernels::cpu
