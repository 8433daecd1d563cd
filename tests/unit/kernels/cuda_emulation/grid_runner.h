// Runs CUDA kernels on the host for tests: each block of the grid in turn, the block's threads
// as cooperative fibers on the calling thread, so that barriers and warp shuffles behave as on
// the device. A barrier or warp operation some thread never reaches (it exited, or waits at
// another) fails the launch instead of hanging.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "absl/status/status.h"

namespace kvd::kernels::cuda {

// The most dynamic shared memory a block may take (sm_90's opt-in limit per block).
inline constexpr size_t kMaxDynamicSharedBytes = 227 * 1024;

// What `extern __shared__` arrays name on the host (see attention_device.cuh's
// DynamicSharedMemory): the running block's dynamic shared memory.
alignas(16) inline thread_local unsigned char dynamic_shared_memory[kMaxDynamicSharedBytes];

namespace emulation {

// CUDA's dim3, which also serves for the thread and block indices.
struct Dim3 {
  constexpr Dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1) : x(x), y(y), z(z) {}
  unsigned x, y, z;
};

// What the running thread sees of its launch (CUDA's built-in variables).
struct ThreadView {
  Dim3 thread_idx{0, 0, 0};
  Dim3 block_idx{0, 0, 0};
  Dim3 block_dim;
  Dim3 grid_dim;
};
inline ThreadView running_thread;

// Runs body() once per thread of every block, with running_thread set accordingly. Fails on a
// launch the device would refuse (grid or block too large, too much dynamic shared memory), on
// a barrier or warp operation that cannot complete, and when a block writes past its dynamic
// shared memory (reads past it, like reads of what the block never wrote, see NaNs).
[[nodiscard]] absl::Status RunGrid(Dim3 grid, Dim3 block, size_t dynamic_shared_bytes,
                                   const std::function<void()>& body);

// Launches kernel<<<grid, block, dynamic_shared_bytes>>>(args...).
template <typename... Params, typename... Args>
[[nodiscard]] absl::Status Launch(void (*kernel)(Params...), Dim3 grid, Dim3 block,
                                  size_t dynamic_shared_bytes, const Args&... args) {
  return RunGrid(grid, block, dynamic_shared_bytes, [&] { kernel(args...); });
}

// The running thread's side of __syncthreads() and the warp operations: they return once every
// thread of the block, or lane of the warp, has arrived. Warp operations take the full mask
// only. Shuffles move a value's bits, up to 64 of them (a double in one exchange, which the
// device makes as two of 32 bits with the same outcome), and read lanes as PTX's shfl does.
void SyncThreads();
void SyncWarp(unsigned mask);
uint64_t ShuffleXor(unsigned mask, uint64_t bits, int lane_mask, int width);
uint64_t ShuffleUp(unsigned mask, uint64_t bits, unsigned delta, int width);
// The lanes of the warp whose `value` equals the running lane's, as a mask (__match_any_sync).
unsigned MatchAny(unsigned mask, uint64_t value);

}  // namespace emulation
}  // namespace kvd::kernels::cuda
