// elementwise.cu's launches on the CPU (see elementwise_launches.h).
#include "tests/unit/kernels/cuda_emulation/cuda_names.h"
// The device code, after the names it is written against.
#include "kernels/cuda/elementwise_kernels.cuh"
#include "tests/unit/kernels/cuda_emulation/elementwise_launches.h"

namespace kvd::kernels::cuda::emulation {
namespace {

template <typename Element>
absl::Status GatherRowsOf(const Element* table, int64_t cols, const int32_t* indices, int64_t count,
                          float* out) {
  if (count <= 0 || cols <= 0) return absl::OkStatus();
  return Launch(GatherRowsKernel<Element>, BlocksFor(count, 1), RowThreads(cols), 0, table, cols,
                indices, count, out);
}

}  // namespace

absl::Status EmulateGatherRows(const float* table, int64_t cols, const int32_t* indices,
                               int64_t count, float* out) {
  return GatherRowsOf(table, cols, indices, count, out);
}

absl::Status EmulateGatherRowsBf16(const uint16_t* table, int64_t cols, const int32_t* indices,
                                   int64_t count, float* out) {
  return GatherRowsOf(reinterpret_cast<const __nv_bfloat16*>(table), cols, indices, count, out);
}

absl::Status EmulateGatherRowsF16(const uint16_t* table, int64_t cols, const int32_t* indices,
                                  int64_t count, float* out) {
  return GatherRowsOf(reinterpret_cast<const __half*>(table), cols, indices, count, out);
}

absl::Status EmulateToBf16(const float* x, int64_t n, uint16_t* out) {
  if (n <= 0) return absl::OkStatus();
  return Launch(ToBf16Kernel, BlocksFor(n, kThreads), kThreads, 0, x, n, out);
}

absl::Status EmulateToF16(const float* x, int64_t n, uint16_t* out) {
  if (n <= 0) return absl::OkStatus();
  return Launch(ToF16Kernel, BlocksFor(n, kThreads), kThreads, 0, x, n, out);
}

absl::Status EmulateRmsNorm(const float* x, const float* weight, int64_t rows, int64_t cols,
                            float eps, float* out) {
  if (rows <= 0 || cols <= 0) return absl::OkStatus();
  return Launch(RmsNormKernel, BlocksFor(rows, 1), RowThreads(cols), 0, x, weight, rows, cols, eps,
                out);
}

absl::Status EmulateApplyRope(float* x, int64_t rows, int32_t num_heads, int32_t head_dim,
                              const int32_t* positions, const float* inv_freq) {
  if (rows <= 0 || num_heads <= 0 || head_dim < 2) return absl::OkStatus();
  return Launch(ApplyRopeKernel, BlocksFor(rows, 1), RowThreads(head_dim / 2), 0, x, rows,
                num_heads, head_dim, positions, inv_freq);
}

absl::Status EmulateSiluMul(const float* gate, const float* up, int64_t n, float* out) {
  if (n <= 0) return absl::OkStatus();
  return Launch(SiluMulKernel, BlocksFor(n, kThreads), kThreads, 0, gate, up, n, out);
}

absl::Status EmulateAdd(float* x, const float* y, int64_t n) {
  if (n <= 0) return absl::OkStatus();
  return Launch(AddKernel, BlocksFor(n, kThreads), kThreads, 0, x, y, n);
}

absl::Status EmulateAddBias(float* out, const float* bias, int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) return absl::OkStatus();
  return Launch(AddBiasKernel, BlocksFor(rows, 1), RowThreads(cols), 0, out, bias, rows, cols);
}

}  // namespace kvd::kernels::cuda::emulation
