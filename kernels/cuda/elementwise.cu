// Row-wise and element-wise f32 kernels of the CUDA backend (embedding gather, 16-bit rounding,
// RMSNorm, RoPE, SiluMul, adds): elementwise_kernels.cuh's kernels. kernels/cpu/cpu_backend.cc is
// their reference.
#include "kernels/cuda/elementwise.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/elementwise_kernels.cuh"

namespace kvd::kernels::cuda {
namespace {

template <typename Element>
void LaunchGatherRowsOf(const Element* table, int64_t cols, const int32_t* indices, int64_t count,
                        float* out, cudaStream_t stream) {
  if (count <= 0 || cols <= 0) return;
  GatherRowsKernel<<<BlocksFor(count, 1), RowThreads(cols), 0, stream>>>(table, cols, indices,
                                                                         count, out);
}

}  // namespace

void LaunchGatherRows(const float* table, int64_t cols, const int32_t* indices, int64_t count,
                      float* out, cudaStream_t stream) {
  LaunchGatherRowsOf(table, cols, indices, count, out, stream);
}

void LaunchGatherRowsBf16(const uint16_t* table, int64_t cols, const int32_t* indices,
                          int64_t count, float* out, cudaStream_t stream) {
  LaunchGatherRowsOf(reinterpret_cast<const __nv_bfloat16*>(table), cols, indices, count, out,
                     stream);
}

void LaunchGatherRowsF16(const uint16_t* table, int64_t cols, const int32_t* indices, int64_t count,
                         float* out, cudaStream_t stream) {
  LaunchGatherRowsOf(reinterpret_cast<const __half*>(table), cols, indices, count, out, stream);
}

void LaunchToBf16(const float* x, int64_t n, uint16_t* out, cudaStream_t stream) {
  if (n <= 0) return;
  ToBf16Kernel<<<BlocksFor(n, kThreads), kThreads, 0, stream>>>(x, n, out);
}

void LaunchToF16(const float* x, int64_t n, uint16_t* out, cudaStream_t stream) {
  if (n <= 0) return;
  ToF16Kernel<<<BlocksFor(n, kThreads), kThreads, 0, stream>>>(x, n, out);
}

void LaunchRmsNorm(const float* x, const float* weight, int64_t rows, int64_t cols, float eps,
                   float* out, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  RmsNormKernel<<<BlocksFor(rows, 1), RowThreads(cols), 0, stream>>>(x, weight, rows, cols, eps,
                                                                     out);
}

void LaunchApplyRope(float* x, int64_t rows, int32_t num_heads, int32_t head_dim,
                     const int32_t* positions, const float* inv_freq, cudaStream_t stream) {
  if (rows <= 0 || num_heads <= 0 || head_dim < 2) return;
  ApplyRopeKernel<<<BlocksFor(rows, 1), RowThreads(head_dim / 2), 0, stream>>>(
      x, rows, num_heads, head_dim, positions, inv_freq);
}

void LaunchSiluMul(const float* gate, const float* up, int64_t n, float* out, cudaStream_t stream) {
  if (n <= 0) return;
  SiluMulKernel<<<BlocksFor(n, kThreads), kThreads, 0, stream>>>(gate, up, n, out);
}

void LaunchAdd(float* x, const float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  AddKernel<<<BlocksFor(n, kThreads), kThreads, 0, stream>>>(x, y, n);
}

void LaunchAddBias(float* out, const float* bias, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  AddBiasKernel<<<BlocksFor(rows, 1), RowThreads(cols), 0, stream>>>(out, bias, rows, cols);
}

}  // namespace kvd::kernels::cuda
