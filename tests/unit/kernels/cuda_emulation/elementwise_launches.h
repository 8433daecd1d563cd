// elementwise.cu's launches on the CPU: the same kernel code, launched the way that file does,
// over host memory. Arguments as the Launch* functions take them, without a stream.
#pragma once

#include <cstdint>

#include "absl/status/status.h"

namespace kvd::kernels::cuda::emulation {

[[nodiscard]] absl::Status EmulateGatherRows(const float* table, int64_t cols,
                                             const int32_t* indices, int64_t count, float* out);
[[nodiscard]] absl::Status EmulateGatherRowsBf16(const uint16_t* table, int64_t cols,
                                                 const int32_t* indices, int64_t count, float* out);
[[nodiscard]] absl::Status EmulateGatherRowsF16(const uint16_t* table, int64_t cols,
                                                const int32_t* indices, int64_t count, float* out);
[[nodiscard]] absl::Status EmulateToBf16(const float* x, int64_t n, uint16_t* out);
[[nodiscard]] absl::Status EmulateToF16(const float* x, int64_t n, uint16_t* out);
[[nodiscard]] absl::Status EmulateRmsNorm(const float* x, const float* weight, int64_t rows,
                                          int64_t cols, float eps, float* out);
[[nodiscard]] absl::Status EmulateApplyRope(float* x, int64_t rows, int32_t num_heads,
                                            int32_t head_dim, const int32_t* positions,
                                            const float* inv_freq);
[[nodiscard]] absl::Status EmulateSiluMul(const float* gate, const float* up, int64_t n,
                                          float* out);
[[nodiscard]] absl::Status EmulateAdd(float* x, const float* y, int64_t n);
[[nodiscard]] absl::Status EmulateAddBias(float* out, const float* bias, int64_t rows,
                                          int64_t cols);

}  // namespace kvd::kernels::cuda::emulation
