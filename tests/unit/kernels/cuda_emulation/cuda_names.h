// The CUDA names kvd's device code uses (the subset kernels/cuda/*_kernels.cuh need), defined
// for the host compiler over the grid runner, so that tests run that code on the CPU. Include
// it before the device code; launch kernels with emulation::Launch. `#pragma unroll` is nvcc's:
// a file including device code compiles with -Wno-unknown-pragmas.
#pragma once

// The C math functions the device code calls (expf, fmaxf, sincos, sqrt, isfinite ...) are the
// host libm's. Where the device's are not exact they are less accurate (CUDA's expf and double
// sincos within 2 ulps, glibc's within 1): tests against the CPU allow for the device's error.
#include <math.h>

#include <bit>
#include <cmath>
#include <cstdint>

#include "tests/unit/kernels/cuda_emulation/grid_runner.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
// Block-scope statics: one copy, shared by the block's fibers (and `extern` works, unlike
// with `static`).
#define __shared__ thread_local
#define __align__(n) __attribute__((aligned(n)))

#define CUDART_INF_F __builtin_huge_valf()

using dim3 = kvd::kernels::cuda::emulation::Dim3;

inline const dim3& threadIdx = kvd::kernels::cuda::emulation::running_thread.thread_idx;
inline const dim3& blockIdx = kvd::kernels::cuda::emulation::running_thread.block_idx;
inline const dim3& blockDim = kvd::kernels::cuda::emulation::running_thread.block_dim;
inline const dim3& gridDim = kvd::kernels::cuda::emulation::running_thread.grid_dim;

struct alignas(16) float4 {
  float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }

inline void __syncthreads() { kvd::kernels::cuda::emulation::SyncThreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  kvd::kernels::cuda::emulation::SyncWarp(mask);
}
inline float __shfl_xor_sync(unsigned mask, float value, int lane_mask, int width = 32) {
  return std::bit_cast<float>(static_cast<uint32_t>(kvd::kernels::cuda::emulation::ShuffleXor(
      mask, std::bit_cast<uint32_t>(value), lane_mask, width)));
}
inline double __shfl_xor_sync(unsigned mask, double value, int lane_mask, int width = 32) {
  return std::bit_cast<double>(kvd::kernels::cuda::emulation::ShuffleXor(
      mask, std::bit_cast<uint64_t>(value), lane_mask, width));
}
inline unsigned __shfl_up_sync(unsigned mask, unsigned value, unsigned delta, int width = 32) {
  return static_cast<unsigned>(kvd::kernels::cuda::emulation::ShuffleUp(mask, value, delta, width));
}
inline unsigned __match_any_sync(unsigned mask, unsigned value) {
  return kvd::kernels::cuda::emulation::MatchAny(mask, value);
}

// Rounding to nearest, as on the device; files including device code compile with
// -ffp-contract=off, so that the host does not fuse them into an fma either.
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }
// The position of the lowest set bit from 1, 0 for none; the number of set bits.
inline int __ffs(int x) { return x == 0 ? 0 : std::countr_zero(static_cast<unsigned>(x)) + 1; }
inline int __popc(unsigned x) { return std::popcount(x); }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a < b ? b : a; }

// Atomics: a block's threads all run on one host thread, and blocks one after another.
inline int atomicMax(int* address, int value) {
  const int old = *address;
  *address = max(old, value);
  return old;
}
inline float atomicAdd(float* address, float value) {
  const float old = *address;
  *address = old + value;
  return old;
}
inline unsigned atomicAdd(unsigned* address, unsigned value) {
  const unsigned old = *address;
  *address = old + value;
  return old;
}

// 16-bit floats (cuda_fp16.h, cuda_bf16.h) as their bit patterns. The f16 conversions go through
// the host compiler's _Float16, which rounds to nearest even and overflows to inf, as the
// device's do; a NaN stays a NaN, its payload perhaps not the device's.
struct __half {
  uint16_t bits;
};
struct __nv_bfloat16 {
  uint16_t bits;
};
inline float __half2float(__half x) { return static_cast<float>(std::bit_cast<_Float16>(x.bits)); }
inline __half __float2half_rn(float x) {
  return {std::bit_cast<uint16_t>(static_cast<_Float16>(x))};
}
inline unsigned short __half_as_ushort(__half x) { return x.bits; }
inline float __bfloat162float(__nv_bfloat16 x) {
  return std::bit_cast<float>(static_cast<uint32_t>(x.bits) << 16);
}
