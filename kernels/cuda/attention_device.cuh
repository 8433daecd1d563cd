// Device helpers the attention kernels share: warp reductions, the paged pool's addressing and
// the block's dynamic shared memory. Device code written against CUDA's names without including
// them: the .cu files include <cuda_runtime.h> and <math_constants.h> first, the CPU tests
// their emulation of the same names (tests/unit/kernels/cuda_emulation/cuda_names.h).
#pragma once

#include <cstdint>

namespace kvd::kernels::cuda {

inline constexpr int kWarpSize = 32;
inline constexpr unsigned kFullMask = 0xffffffffu;

// Butterfly sum over aligned groups of kLanes lanes (a power of two, at most 32). IEEE
// addition commutes, so every lane of a group ends with the same bits, which keeps values
// derived from it (and the branches on them) uniform across the group.
template <int kLanes = kWarpSize>
__device__ __forceinline__ float GroupSum(float x) {
#pragma unroll
  for (int offset = kLanes / 2; offset > 0; offset /= 2) {
    x += __shfl_xor_sync(kFullMask, x, offset);
  }
  return x;
}

__device__ __forceinline__ float WarpMax(float x) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    x = fmaxf(x, __shfl_xor_sync(kFullMask, x, offset));
  }
  return x;
}

// Pool offset of entry j of the (layer, kv head) whose block table is `table`.
__device__ __forceinline__ int64_t EntryOffset(const int32_t* table, int32_t block_size,
                                               int32_t j) {
  return static_cast<int64_t>(table[j / block_size]) * block_size + j % block_size;
}

// The thread block's dynamic shared memory: as many bytes as the launch asked for.
__device__ __forceinline__ unsigned char* DynamicSharedMemory() {
  extern __shared__ __align__(16) unsigned char dynamic_shared_memory[];
  return dynamic_shared_memory;
}

__device__ __forceinline__ float Dot4(float4 a, float4 b, float sum) {
  sum = fmaf(a.x, b.x, sum);
  sum = fmaf(a.y, b.y, sum);
  sum = fmaf(a.z, b.z, sum);
  return fmaf(a.w, b.w, sum);
}

}  // namespace kvd::kernels::cuda
