// Reducing a step's logits on the device to what sampling reads (Backend::TopLogits): each row's
// largest values with their ids and its two log-normalizers. Every pointer is device memory;
// the launch is asynchronous on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace kvd::kernels::cuda {

// For r < rows, over logits[r, 0 .. vocab): values[r * k + i] and ids[r * k + i] for the i-th
// largest (equal values: lower id first), log_normalizers[2r] = log Σ exp(logit) and
// log_normalizers[2r + 1] = log Σ exp(logit * inverse_temperatures[r]).
// 1 <= k <= min(vocab, kMaxTopLogits).
void LaunchTopLogits(const float* logits, int32_t rows, int32_t vocab, int32_t k,
                     const float* inverse_temperatures, float* values, int32_t* ids,
                     float* log_normalizers, cudaStream_t stream);

}  // namespace kvd::kernels::cuda
