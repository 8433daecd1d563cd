// Row-wise and element-wise kernels of the CUDA backend, f32: embedding gather (from f32, bf16 or
// f16), rounding to bf16 or f16 for the GEMMs, RMSNorm, RoPE, SiluMul, residual add and bias add.
// Every pointer is device memory; every launch is asynchronous on `stream` (check
// cudaGetLastError after).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace kvd::kernels::cuda {

// out[i, :] = table[indices[i], :] for i < count.
void LaunchGatherRows(const float* table, int64_t cols, const int32_t* indices, int64_t count,
                      float* out, cudaStream_t stream);
// The same from a table of bf16 bit patterns, widened to f32.
void LaunchGatherRowsBf16(const uint16_t* table, int64_t cols, const int32_t* indices,
                          int64_t count, float* out, cudaStream_t stream);
// The same from a table of f16 bit patterns, widened to f32.
void LaunchGatherRowsF16(const uint16_t* table, int64_t cols, const int32_t* indices, int64_t count,
                         float* out, cudaStream_t stream);
// out[i] = bf16(x[i]) for i < n, rounded to nearest even, as bit patterns.
void LaunchToBf16(const float* x, int64_t n, uint16_t* out, cudaStream_t stream);
// out[i] = f16(x[i]) for i < n, rounded to nearest even, as bit patterns. Finite values beyond
// f16's range saturate to ±65504 instead of becoming inf; inf and NaN are kept.
void LaunchToF16(const float* x, int64_t n, uint16_t* out, cudaStream_t stream);
// out[r, :] = x[r, :] / sqrt(mean(x[r, :]²) + eps) * weight, for r < rows; out may be x.
void LaunchRmsNorm(const float* x, const float* weight, int64_t rows, int64_t cols, float eps,
                   float* out, cudaStream_t stream);
// Rotates each head of x ([rows, num_heads * head_dim]) in place by positions[r], rotate-half
// convention: pairs (i, i + head_dim / 2) turn by positions[r] * inv_freq[i].
void LaunchApplyRope(float* x, int64_t rows, int32_t num_heads, int32_t head_dim,
                     const int32_t* positions, const float* inv_freq, cudaStream_t stream);
// out[i] = silu(gate[i]) * up[i] for i < n; out may be gate.
void LaunchSiluMul(const float* gate, const float* up, int64_t n, float* out, cudaStream_t stream);
// x[i] += y[i] for i < n.
void LaunchAdd(float* x, const float* y, int64_t n, cudaStream_t stream);
// out[r, c] += bias[c].
void LaunchAddBias(float* out, const float* bias, int64_t rows, int64_t cols, cudaStream_t stream);

}  // namespace kvd::kernels::cuda
