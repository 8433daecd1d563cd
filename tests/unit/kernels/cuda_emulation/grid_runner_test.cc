// The CUDA emulation: warp shuffles and barriers behave as on the device, and code the device
// would hang on or corrupt memory with fails the launch instead.
#include "tests/unit/kernels/cuda_emulation/grid_runner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/unit/kernels/cuda_emulation/cuda_names.h"
// Device code, after the names it is written against.
#include "kernels/cuda/attention_device.cuh"

namespace kvd::kernels::cuda::emulation {
namespace {

// Per block: the sum of blockIdx.x * 1000 + threadIdx.x over its threads, by a butterfly in
// each warp and the warps' sums through shared memory.
__global__ void BlockSumKernel(float* sums) {
  __shared__ float warp_sums[32];
  float x = static_cast<float>(blockIdx.x * 1000 + threadIdx.x);
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = x;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) total += warp_sums[w];
    sums[blockIdx.x] = total;
  }
}

TEST(GridRunnerTest, ShufflesAndBarriersCombineTheBlocksThreads) {
  std::vector<float> sums(3);
  ASSERT_TRUE(Launch(BlockSumKernel, dim3(3), dim3(256), 0, sums.data()).ok());
  for (int b = 0; b < 3; ++b) EXPECT_EQ(sums[b], 256.0f * b * 1000 + 255.0f * 256 / 2) << b;
}

// Each thread reads what its neighbours wrote before the barrier, through static and dynamic
// shared memory; out[t] = 2 * ((t + 1) % n) + ((t + n - 1) % n).
__global__ void NeighboursKernel(int* out) {
  __shared__ int written[128];
  int* dynamic = reinterpret_cast<int*>(DynamicSharedMemory());
  const int n = static_cast<int>(blockDim.x), t = static_cast<int>(threadIdx.x);
  written[t] = 2 * t;
  dynamic[t] = t;
  __syncthreads();
  out[t] = written[(t + 1) % n] + dynamic[(t + n - 1) % n];
}

TEST(GridRunnerTest, WritesBeforeABarrierAreSeenAfterItInEitherDirection) {
  std::vector<int> out(128);
  ASSERT_TRUE(Launch(NeighboursKernel, dim3(2), dim3(128), 128 * sizeof(int), out.data()).ok());
  for (int t = 0; t < 128; ++t) EXPECT_EQ(out[t], 2 * ((t + 1) % 128) + (t + 127) % 128) << t;
}

__global__ void ExitBeforeBarrierKernel() {
  if (threadIdx.x >= 32) return;
  __syncthreads();
}

TEST(GridRunnerTest, ABarrierSomeThreadsExitedBeforeFails) {
  const absl::Status status = Launch(ExitBeforeBarrierKernel, dim3(1), dim3(64), 0);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("cannot progress"), absl::string_view::npos) << status;
}

__global__ void DivergentShuffleKernel(float* out) {
  if (threadIdx.x % 32 == 5) return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
}

TEST(GridRunnerTest, AShuffleALaneNeverReachesFails) {
  std::vector<float> out(32);
  EXPECT_FALSE(Launch(DivergentShuffleKernel, dim3(1), dim3(32), 0, out.data()).ok());
}

__global__ void PartialMaskKernel() { __syncwarp(0xffffu); }

TEST(GridRunnerTest, WarpOperationsTakeTheFullMaskOnly) {
  EXPECT_FALSE(Launch(PartialMaskKernel, dim3(1), dim3(32), 0).ok());
}

__global__ void WritePastSharedKernel(int bytes) { DynamicSharedMemory()[bytes] = 0; }

TEST(GridRunnerTest, WritingPastTheDynamicSharedMemoryFails) {
  EXPECT_TRUE(Launch(WritePastSharedKernel, dim3(1), dim3(32), 64, 63).ok());
  EXPECT_FALSE(Launch(WritePastSharedKernel, dim3(1), dim3(32), 64, 64).ok());
}

__global__ void ReadSharedKernel(float* out) {
  out[0] = reinterpret_cast<const float*>(DynamicSharedMemory())[0];
}

TEST(GridRunnerTest, DynamicSharedMemoryNobodyWroteReadsAsNaN) {
  float out = 0.0f;
  ASSERT_TRUE(Launch(ReadSharedKernel, dim3(1), dim3(32), 64, &out).ok());
  EXPECT_TRUE(std::isnan(out));
}

}  // namespace
}  // namespace kvd::kernels::cuda::emulation
