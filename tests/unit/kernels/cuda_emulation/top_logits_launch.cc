// top_logits.cu's launch on the CPU (see top_logits_launch.h).
#include "tests/unit/kernels/cuda_emulation/cuda_names.h"
// The device code, after the names it is written against.
#include "kernels/cuda/top_logits_kernels.cuh"
#include "tests/unit/kernels/cuda_emulation/top_logits_launch.h"

namespace kvd::kernels::cuda::emulation {

absl::Status EmulateTopLogits(const float* logits, int32_t rows, int32_t vocab, int32_t k,
                              const float* inverse_temperatures, float* values, int32_t* ids,
                              float* log_normalizers) {
  return Launch(TopLogitsKernel, static_cast<unsigned>(rows), kThreads, 0, logits, vocab, k,
                inverse_temperatures, values, ids, log_normalizers);
}

}  // namespace kvd::kernels::cuda::emulation
