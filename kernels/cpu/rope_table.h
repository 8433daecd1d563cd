// The cosines and sines of a step's rotary angles (position × inverse frequency), kept from one
// ApplyRope call to the next: every layer's q and k of a step rotate by the same angles, so the
// CPU backend computes them once a step rather than twice a layer.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cpu/thread_pool.h"

namespace kvd::kernels::cpu {

class RopeTable {
 public:
  // Makes the table that of `positions` and `inv_freq`, recomputing it (rows over `threads`)
  // only where they differ from the last call's.
  void Update(std::span<const int32_t> positions, std::span<const float> inv_freq,
              ThreadPool& threads);

  // cos and sin of angle i of row r, for i < inv_freq.size(): the angle rounded to f32 first,
  // as the reference implementations compute it.
  const float* Cosines(int64_t row) const { return cos_.data() + row * half_; }
  const float* Sines(int64_t row) const { return sin_.data() + row * half_; }

 private:
  std::vector<int32_t> positions_;
  std::vector<float> inv_freq_;
  int64_t half_ = 0;
  std::vector<float> cos_;
  std::vector<float> sin_;
};

}  // namespace kvd::kernels::cpu
