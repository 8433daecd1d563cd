// Backend::TopLogits on the device: top_logits_kernels.cuh's kernel, one thread block per row.
// kernels/cpu/top_logits.cc is the reference.
#include "kernels/cuda/top_logits.cuh"

#include <math_constants.h>

#include "kernels/cuda/top_logits_kernels.cuh"

namespace kvd::kernels::cuda {

void LaunchTopLogits(const float* logits, int32_t rows, int32_t vocab, int32_t k,
                     const float* inverse_temperatures, float* values, int32_t* ids,
                     float* log_normalizers, cudaStream_t stream) {
  TopLogitsKernel<<<rows, kThreads, 0, stream>>>(logits, vocab, k, inverse_temperatures, values,
                                                 ids, log_normalizers);
}

}  // namespace kvd::kernels::cuda
