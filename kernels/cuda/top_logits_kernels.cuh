// Device code of Backend::TopLogits that top_logits.cu launches, one thread block of kThreads
// per row: the row's max and sums, an exact radix select of the k-th largest value, the values
// above it plus the lowest-id ties, then a bitonic sort of those. Written against CUDA's names
// without including them (see attention_device.cuh), so that the CPU tests can run it.
#pragma once

#include <cstdint>

#include "kernels/backend.h"

namespace kvd::kernels::cuda {
// Internal linkage: a program holds this code once, nvcc's build (top_logits.cu) or the CPU
// emulation's, never both under one name.
namespace {

constexpr int kWarpSize = 32;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / kWarpSize;
// Block reductions finish in one warp, which then holds one partial per warp.
static_assert(kWarps == kWarpSize);
// The select reads keys a byte at a time, most significant first.
constexpr int kDigitBits = 8;
constexpr int kBins = 1 << kDigitBits;
static_assert(kBins <= kThreads && kMaxTopLogits <= kThreads);

// Unsigned keys in the order of the floats: larger float, larger key. -0 gets +0's key, so that
// the two tie as float comparisons (the reference's) have them.
__device__ __forceinline__ uint32_t OrderedKey(float x) {
  uint32_t bits = __float_as_uint(x);
  if (bits == 0x80000000u) bits = 0;
  return (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
}

// One selected logit, ordered as the results are (larger first): by key, then by lower id.
__device__ __forceinline__ uint64_t SortKey(uint32_t key, int32_t id) {
  return static_cast<uint64_t>(key) << 32 | (0xffffffffu - static_cast<uint32_t>(id));
}

__device__ __forceinline__ int32_t IdOf(uint64_t sort_key) {
  return static_cast<int32_t>(0xffffffffu - static_cast<uint32_t>(sort_key));
}

struct MaxOf {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOf {
  __device__ double operator()(double a, double b) const { return a + b; }
};

template <typename T, typename Combine>
__device__ T WarpReduce(T x, Combine combine) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    x = combine(x, __shfl_xor_sync(kFullMask, x, offset));
  }
  return x;
}

// The combination of every thread's `x`, returned to all; `partials` holds kWarps values.
template <typename T, typename Combine>
__device__ T BlockReduce(T x, T* partials, Combine combine) {
  x = WarpReduce(x, combine);
  if (threadIdx.x % kWarpSize == 0) partials[threadIdx.x / kWarpSize] = x;
  __syncthreads();
  x = WarpReduce(partials[threadIdx.x % kWarpSize], combine);
  __syncthreads();  // `partials` may be reused at once
  return x;
}

// The sum of `x` over the threads before this one; `partials` holds kWarps values.
__device__ uint32_t BlockExclusiveSum(uint32_t x, uint32_t* partials) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  uint32_t inclusive = x;
#pragma unroll
  for (int offset = 1; offset < kWarpSize; offset *= 2) {
    const uint32_t before = __shfl_up_sync(kFullMask, inclusive, offset);
    if (lane >= offset) inclusive += before;
  }
  if (lane == kWarpSize - 1) partials[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    uint32_t total = partials[lane];
#pragma unroll
    for (int offset = 1; offset < kWarpSize; offset *= 2) {
      const uint32_t before = __shfl_up_sync(kFullMask, total, offset);
      if (lane >= offset) total += before;
    }
    partials[lane] = total;
  }
  __syncthreads();
  const uint32_t result = (warp > 0 ? partials[warp - 1] : 0) + inclusive - x;
  __syncthreads();
  return result;
}

// Where the radix select stands: the key bits fixed so far, and how many of the row's largest
// still lie among the keys that share them.
struct SelectDigit {
  uint32_t digit;
  uint32_t wanted;  // among keys with this digit too
  uint32_t count;   // keys with this digit too
};

struct SharedState {
  float max_partials[kWarps];
  double sum_partials[kWarps];
  uint32_t scan_partials[kWarps];
  uint32_t histogram[kBins];
  SelectDigit chosen;
  uint32_t taken;  // slots filled by atomics
  uint64_t selected[kMaxTopLogits];
};

__global__ void __launch_bounds__(kThreads)
    TopLogitsKernel(const float* __restrict__ logits, int32_t vocab, int32_t k,
                    const float* __restrict__ inverse_temperatures, float* __restrict__ values,
                    int32_t* __restrict__ ids, float* __restrict__ log_normalizers) {
  __shared__ SharedState shared;
  const int t = threadIdx.x;
  const int64_t r = blockIdx.x;
  const float* row = logits + r * vocab;

  // The normalizers, each log Σ exp((logit − max) * s), partial sums in double.
  float max = -CUDART_INF_F;
  for (int32_t j = t; j < vocab; j += kThreads) max = fmaxf(max, row[j]);
  max = BlockReduce(max, shared.max_partials, MaxOf{});
  const float scale = inverse_temperatures[r];
  double sum = 0.0, scaled_sum = 0.0;
  if (max != -CUDART_INF_F) {
    for (int32_t j = t; j < vocab; j += kThreads) {
      const float shifted = row[j] - max;
      sum += expf(shifted);
      scaled_sum += expf(shifted * scale);
    }
  }
  sum = BlockReduce(sum, shared.sum_partials, SumOf{});
  scaled_sum = BlockReduce(scaled_sum, shared.sum_partials, SumOf{});
  if (t == 0) {
    const bool empty = max == -CUDART_INF_F;
    log_normalizers[2 * r] = empty ? max : static_cast<float>(log(sum));
    log_normalizers[2 * r + 1] = empty ? max : static_cast<float>(log(scaled_sum));
  }

  // The k-th largest key, a digit per pass over the keys that share the digits chosen so far.
  uint32_t prefix = 0, prefix_mask = 0;
  SelectDigit chosen{0, static_cast<uint32_t>(k), static_cast<uint32_t>(vocab)};
  for (int shift = 32 - kDigitBits; shift >= 0; shift -= kDigitBits) {
    if (t < kBins) shared.histogram[t] = 0;
    __syncthreads();
    // Lanes with the same digit add together: logits crowd into few top bytes, and one atomic
    // per lane on the same bin would serialise.
    for (int32_t base = 0; base < vocab; base += kThreads) {
      const int32_t j = base + t;
      const uint32_t key = j < vocab ? OrderedKey(row[j]) : 0;
      const bool counted = j < vocab && (key & prefix_mask) == prefix;
      const uint32_t bin = counted ? (key >> shift) % kBins : kBins;
      const unsigned peers = __match_any_sync(kFullMask, bin);
      if (counted && t % kWarpSize == __ffs(peers) - 1) {
        atomicAdd(&shared.histogram[bin], static_cast<uint32_t>(__popc(peers)));
      }
    }
    __syncthreads();
    // Thread t looks at the t-th largest digit; the keys in larger digits come before it.
    const uint32_t digit = kBins - 1 - t;
    const uint32_t count = t < kBins ? shared.histogram[digit] : 0;
    const uint32_t larger = BlockExclusiveSum(count, shared.scan_partials);
    if (t < kBins && larger < chosen.wanted && chosen.wanted <= larger + count) {
      shared.chosen = SelectDigit{digit, chosen.wanted - larger, count};
    }
    __syncthreads();
    chosen = shared.chosen;
    prefix |= chosen.digit << shift;
    prefix_mask |= static_cast<uint32_t>(kBins - 1) << shift;
  }
  const uint32_t threshold = prefix;  // the k-th largest key; chosen.count keys equal it

  // Every key above the threshold, and the chosen.wanted ties with the lowest ids; the slots of
  // the ones above are claimed in any order, as the sort below orders them.
  if (t == 0) shared.taken = 0;
  if (t >= k && t < kMaxTopLogits) shared.selected[t] = 0;  // below every key: sorts last
  __syncthreads();
  if (chosen.wanted == chosen.count) {
    for (int32_t j = t; j < vocab; j += kThreads) {
      const uint32_t key = OrderedKey(row[j]);
      if (key >= threshold) shared.selected[atomicAdd(&shared.taken, 1u)] = SortKey(key, j);
    }
  } else {
    // Contiguous chunks, so that a tie's rank is the ties in the chunks before plus its own.
    const int32_t chunk = (vocab + kThreads - 1) / kThreads;
    const int32_t begin = min(vocab, t * chunk), end = min(vocab, begin + chunk);
    uint32_t ties = 0;
    for (int32_t j = begin; j < end; ++j) ties += OrderedKey(row[j]) == threshold;
    uint32_t rank = BlockExclusiveSum(ties, shared.scan_partials);
    const uint32_t first_tie_slot = k - chosen.wanted;
    for (int32_t j = begin; j < end; ++j) {
      const uint32_t key = OrderedKey(row[j]);
      if (key > threshold) {
        shared.selected[atomicAdd(&shared.taken, 1u)] = SortKey(key, j);
      } else if (key == threshold && rank < chosen.wanted) {
        shared.selected[first_tie_slot + rank++] = SortKey(key, j);
      }
    }
  }
  __syncthreads();

  // Bitonic sort, larger first, over the next power of two at or above k.
  int32_t width = 1;
  while (width < k) width *= 2;
  for (int32_t size = 2; size <= width; size *= 2) {
    for (int32_t stride = size / 2; stride > 0; stride /= 2) {
      const int32_t partner = t ^ stride;
      if (t < width && partner > t) {
        const uint64_t a = shared.selected[t], b = shared.selected[partner];
        const bool larger_first = (t & size) == 0;
        if (larger_first ? a < b : a > b) {
          shared.selected[t] = b;
          shared.selected[partner] = a;
        }
      }
      __syncthreads();
    }
  }
  if (t < k) {
    const int32_t id = IdOf(shared.selected[t]);
    values[r * k + t] = row[id];  // the logit itself, so that -0 stays -0
    ids[r * k + t] = id;
  }
}

}  // namespace
}  // namespace kvd::kernels::cuda
