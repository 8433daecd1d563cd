// The largest logits of each row and the row's log-normalizers (CPU reference of
// Backend::TopLogits).
#pragma once

#include <cstdint>
#include <span>

#include "kernels/cpu/thread_pool.h"
#include "kernels/tensor.h"

namespace kvd::kernels::cpu {

// Backend::TopLogits on host memory, rows spread over `threads`.
void SelectTopLogits(const Tensor& logits, int32_t k, std::span<const float> inverse_temperatures,
                     float* values, int32_t* ids, float* log_normalizers, ThreadPool& threads);

}  // namespace kvd::kernels::cpu
