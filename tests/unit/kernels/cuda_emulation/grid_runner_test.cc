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

// out[t] = the lane's value after an xor shuffle by `lane_mask` in segments of `width` lanes.
__global__ void ShuffleXorKernel(int lane_mask, int width, unsigned* out) {
  const float x = static_cast<float>(threadIdx.x);
  out[threadIdx.x] = static_cast<unsigned>(__shfl_xor_sync(0xffffffffu, x, lane_mask, width));
}

TEST(GridRunnerTest, XorShufflesReachEarlierSegmentsButNotLaterOnes) {
  std::vector<unsigned> out(64);
  ASSERT_TRUE(Launch(ShuffleXorKernel, dim3(1), dim3(64), 0, 3, 32, out.data()).ok());
  for (unsigned t = 0; t < 64; ++t) EXPECT_EQ(out[t], t ^ 3) << t;
  // In segments of 8, lane l ^ 8 lies in the next segment for l % 16 < 8 (the lane keeps its
  // value), in the one before otherwise (it reads it).
  ASSERT_TRUE(Launch(ShuffleXorKernel, dim3(1), dim3(64), 0, 8, 8, out.data()).ok());
  for (unsigned t = 0; t < 64; ++t) EXPECT_EQ(out[t], t % 16 < 8 ? t : t ^ 8) << t;
}

// Each lane's double swapped with lane ^ 5's: every bit of it, not only a float's worth.
__global__ void ShuffleDoubleKernel(double* out) {
  const double x = 1.0 + threadIdx.x * 0x1p-50;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, x, 5);
}

TEST(GridRunnerTest, DoublesShuffleWhole) {
  std::vector<double> out(32);
  ASSERT_TRUE(Launch(ShuffleDoubleKernel, dim3(1), dim3(32), 0, out.data()).ok());
  for (unsigned t = 0; t < 32; ++t) EXPECT_EQ(out[t], 1.0 + (t ^ 5) * 0x1p-50) << t;
}

// out[t] = the inclusive prefix sum of 1 + lane over the thread's segment of `width` lanes, by
// up shuffles: a lane with fewer than `offset` lanes before it in its segment keeps its value.
__global__ void PrefixSumKernel(int width, unsigned* out) {
  const unsigned lane = threadIdx.x % 32;
  unsigned sum = 1 + lane;
  for (int offset = 1; offset < width; offset *= 2) {
    const unsigned before = __shfl_up_sync(0xffffffffu, sum, offset, width);
    if (lane % width >= static_cast<unsigned>(offset)) sum += before;
  }
  out[threadIdx.x] = sum;
}

TEST(GridRunnerTest, UpShufflesStayInTheirSegment) {
  for (int width : {32, 8}) {
    std::vector<unsigned> out(64);
    ASSERT_TRUE(Launch(PrefixSumKernel, dim3(1), dim3(64), 0, width, out.data()).ok());
    for (unsigned t = 0; t < 64; ++t) {
      const unsigned lane = t % 32, first = lane / width * width;
      unsigned expected = 0;
      for (unsigned l = first; l <= lane; ++l) expected += 1 + l;
      EXPECT_EQ(out[t], expected) << "width " << width << " thread " << t;
    }
  }
}

// An up shuffle by `delta` (its low five bits): out[t] is the lane it read.
__global__ void ShuffleUpKernel(unsigned delta, unsigned* out) {
  out[threadIdx.x] = __shfl_up_sync(0xffffffffu, threadIdx.x, delta);
}

TEST(GridRunnerTest, UpShufflesTakeTheLowFiveBitsOfTheirDelta) {
  std::vector<unsigned> out(32);
  ASSERT_TRUE(Launch(ShuffleUpKernel, dim3(1), dim3(32), 0, 35u, out.data()).ok());
  for (unsigned t = 0; t < 32; ++t) EXPECT_EQ(out[t], t >= 3 ? t - 3 : t) << t;
}

// Lanes holding the same value find each other; each group's lowest lane counts the group into
// a shared histogram, as TopLogits's select does.
__global__ void MatchAnyKernel(unsigned* peers, unsigned* histogram) {
  __shared__ unsigned bins[5];
  if (threadIdx.x < 5) bins[threadIdx.x] = 0;
  __syncthreads();
  const unsigned lane = threadIdx.x % 32, value = lane * 7 % 5;
  const unsigned same = __match_any_sync(0xffffffffu, value);
  peers[threadIdx.x] = same;
  if (lane == static_cast<unsigned>(__ffs(static_cast<int>(same)) - 1)) {
    atomicAdd(&bins[value], static_cast<unsigned>(__popc(same)));
  }
  __syncthreads();
  if (threadIdx.x < 5) histogram[threadIdx.x] = bins[threadIdx.x];
}

TEST(GridRunnerTest, MatchAnyGroupsTheLanesOfEqualValues) {
  std::vector<unsigned> peers(64), histogram(5);
  ASSERT_TRUE(Launch(MatchAnyKernel, dim3(1), dim3(64), 0, peers.data(), histogram.data()).ok());
  std::vector<unsigned> expected_histogram(5);
  for (unsigned t = 0; t < 64; ++t) {
    unsigned expected = 0;
    for (unsigned l = 0; l < 32; ++l) expected |= l * 7 % 5 == t % 32 * 7 % 5 ? 1u << l : 0u;
    EXPECT_EQ(peers[t], expected) << t;
    ++expected_histogram[t % 32 * 7 % 5];
  }
  EXPECT_EQ(histogram, expected_histogram);
}

// Half the warp shuffles while the other half matches: divergent warp operations.
__global__ void MixedWarpOperationsKernel(unsigned* out) {
  out[threadIdx.x] = threadIdx.x < 16 ? __shfl_up_sync(0xffffffffu, threadIdx.x, 1)
                                      : __match_any_sync(0xffffffffu, threadIdx.x);
}

TEST(GridRunnerTest, LanesInDifferentWarpOperationsFail) {
  std::vector<unsigned> out(32);
  const absl::Status status = Launch(MixedWarpOperationsKernel, dim3(1), dim3(32), 0, out.data());
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("__shfl_up_sync and __match_any_sync"), absl::string_view::npos)
      << status;
}

__global__ void PartialMaskKernel() { __syncwarp(0xffffu); }

__global__ void PartialMaskMatchKernel() { __match_any_sync(0x1u, 0); }

TEST(GridRunnerTest, WarpOperationsTakeTheFullMaskOnly) {
  EXPECT_FALSE(Launch(PartialMaskKernel, dim3(1), dim3(32), 0).ok());
  EXPECT_FALSE(Launch(PartialMaskMatchKernel, dim3(1), dim3(32), 0).ok());
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
