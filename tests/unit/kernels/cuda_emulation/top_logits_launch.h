// top_logits.cu's launch on the CPU: the same kernel code, launched the way that file does, over
// host memory. Arguments as LaunchTopLogits takes them, without a stream.
#pragma once

#include <cstdint>

#include "absl/status/status.h"

namespace kvd::kernels::cuda::emulation {

[[nodiscard]] absl::Status EmulateTopLogits(const float* logits, int32_t rows, int32_t vocab,
                                            int32_t k, const float* inverse_temperatures,
                                            float* values, int32_t* ids, float* log_normalizers);

}  // namespace kvd::kernels::cuda::emulation
