// Device code of the row-wise and element-wise f32 kernels that elementwise.cu launches
// (embedding gather, 16-bit rounding, RMSNorm, RoPE, SiluMul, adds), with the launch geometry
// they assume. Written against CUDA's names (cuda_bf16.h and cuda_fp16.h's included) without
// including them (see attention_device.cuh), so that the CPU tests can run it.
#pragma once

#include <algorithm>
#include <cstdint>

namespace kvd::kernels::cuda {
// Internal linkage: a program holds this code once, nvcc's build (elementwise.cu) or the CPU
// emulation's, never both under one name.
namespace {

constexpr int kWarpSize = 32;
// Threads per block of the flat element-wise kernels, and the most per row of a row kernel.
constexpr int kThreads = 256;
// Grids stop growing here (several waves of an H200's 132 SMs); grid-stride loops cover the rest.
constexpr int64_t kMaxBlocks = 8192;

int BlocksFor(int64_t work_items, int64_t per_block) {
  return static_cast<int>(std::min((work_items + per_block - 1) / per_block, kMaxBlocks));
}

// Enough whole warps to give each of `width` columns a thread, at most kThreads.
int RowThreads(int64_t width) {
  const int64_t warps = (std::min<int64_t>(width, kThreads) + kWarpSize - 1) / kWarpSize;
  return static_cast<int>(std::max<int64_t>(warps, 1) * kWarpSize);
}

__device__ float Widen(float x) { return x; }
__device__ float Widen(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ float Widen(__half x) { return __half2float(x); }

// Blocks stride over rows, their threads over the row's columns; each value widened to f32.
template <typename Element>
__global__ void GatherRowsKernel(const Element* __restrict__ table, int64_t cols,
                                 const int32_t* __restrict__ indices, int64_t count,
                                 float* __restrict__ out) {
  for (int64_t row = blockIdx.x; row < count; row += gridDim.x) {
    const Element* src = table + static_cast<int64_t>(indices[row]) * cols;
    float* dst = out + row * cols;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) dst[c] = Widen(src[c]);
  }
}

// Round to nearest even, NaN kept a NaN: engine's FloatToBF16 on the device.
__global__ void ToBf16Kernel(const float* __restrict__ x, int64_t n, uint16_t* __restrict__ out) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint32_t bits = __float_as_uint(x[i]);
    if ((bits & 0x7fffffffu) > 0x7f800000u) {
      out[i] = static_cast<uint16_t>((bits >> 16) | 0x40u);
      continue;
    }
    bits += 0x7fffu + ((bits >> 16) & 1u);
    out[i] = static_cast<uint16_t>(bits >> 16);
  }
}

// Round to nearest even (the hardware conversion). A finite value beyond f16's range saturates
// to ±65504: the f32 activation it stands for is finite, and an inf would turn the GEMM's sums
// into inf or NaN where the f32 reference has a finite result. inf and NaN pass through.
__global__ void ToF16Kernel(const float* __restrict__ x, int64_t n, uint16_t* __restrict__ out) {
  constexpr float kF16Max = 65504.0f;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float value = x[i];
    if (isfinite(value)) value = fminf(fmaxf(value, -kF16Max), kF16Max);
    out[i] = __half_as_ushort(__float2half_rn(value));
  }
}

// The sum of `value` over the block, returned to every thread. blockDim.x is a multiple of the
// warp size, at most 1024. Starts with a barrier so that `scratch` may be reused right away.
__device__ double BlockSum(double value, double* scratch /* [32] */) {
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  const int num_warps = blockDim.x / kWarpSize;
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  }
  __syncthreads();  // every thread is done reading the previous call's result
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  value = lane < num_warps ? scratch[lane] : 0.0;
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  }
  return value;  // every warp reduced the same partial sums
}

// One block per row (grid-stride over rows). The squares are summed in double and the inverse
// RMS taken in double, as the CPU backend does. In place is safe: BlockSum's barriers order
// every read of the row before any write to it.
__global__ void RmsNormKernel(const float* x, const float* __restrict__ weight, int64_t rows,
                              int64_t cols, float eps, float* out) {
  __shared__ double scratch[kWarpSize];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* in = x + row * cols;
    float* dst = out + row * cols;
    double sum_squares = 0.0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const double v = in[c];
      sum_squares += v * v;
    }
    sum_squares = BlockSum(sum_squares, scratch);
    const float inv_rms =
        static_cast<float>(1.0 / sqrt(sum_squares / static_cast<double>(cols) + eps));
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      dst[c] = __fmul_rn(__fmul_rn(in[c], inv_rms), weight[c]);
    }
  }
}

// One block per row (grid-stride over rows); thread t takes frequencies t, t + blockDim.x, ...
// and turns that pair in every head, so each angle's sine and cosine is computed once per row.
// The angle is rounded to f32 as on the CPU; sin and cos are evaluated in double and rounded,
// which gives the correctly rounded f32 value the host libm aims for. The explicit _rn
// operations keep the compiler from fusing the rotation into FMAs, which the CPU does not do.
__global__ void ApplyRopeKernel(float* x, int64_t rows, int32_t num_heads, int32_t head_dim,
                                const int32_t* __restrict__ positions,
                                const float* __restrict__ inv_freq) {
  const int32_t half = head_dim / 2;
  const int64_t row_width = static_cast<int64_t>(num_heads) * head_dim;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float position = static_cast<float>(positions[row]);
    float* row_x = x + row * row_width;
    for (int32_t i = threadIdx.x; i < half; i += blockDim.x) {
      const float angle = __fmul_rn(position, inv_freq[i]);
      double sin_d = 0.0;
      double cos_d = 0.0;
      sincos(static_cast<double>(angle), &sin_d, &cos_d);
      const float sin_a = static_cast<float>(sin_d);
      const float cos_a = static_cast<float>(cos_d);
      for (int32_t head = 0; head < num_heads; ++head) {
        float* h = row_x + static_cast<int64_t>(head) * head_dim;
        const float first = h[i];
        const float second = h[i + half];
        h[i] = __fsub_rn(__fmul_rn(first, cos_a), __fmul_rn(second, sin_a));
        h[i + half] = __fadd_rn(__fmul_rn(second, cos_a), __fmul_rn(first, sin_a));
      }
    }
  }
}

// Grid-stride over elements. Each element is read and then written by the same thread, so the
// output may alias an input; hence no __restrict__ here or in AddKernel.
__global__ void SiluMulKernel(const float* gate, const float* up, int64_t n, float* out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const float g = gate[i];
    out[i] = __fmul_rn(g / (1.0f + expf(-g)), up[i]);
  }
}

__global__ void AddKernel(float* x, const float* y, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    x[i] += y[i];
  }
}

// Blocks stride over rows, their threads over the columns.
__global__ void AddBiasKernel(float* __restrict__ out, const float* __restrict__ bias, int64_t rows,
                              int64_t cols) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    float* dst = out + row * cols;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) dst[c] += bias[c];
  }
}

}  // namespace
}  // namespace kvd::kernels::cuda
