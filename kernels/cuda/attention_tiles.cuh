// What the tiled attention kernels (prefill attention, scores) share: their thread geometry and
// the scoring of a tile's entry against a warp's query vectors. Device code written against
// CUDA's names without including them (see attention_device.cuh).
#pragma once

#include <cstdint>

#include "kernels/cuda/attention_device.cuh"
#include "kernels/cuda/attention_plan.h"

namespace kvd::kernels::cuda {

// kTileWarps warps a thread block, each taking kVectorsPerWarp of a tile's kQueryTileVectors
// query vectors; lane e of a warp takes entry e of a tile of kEntryTile entries.
inline constexpr int kTileWarps = 4;
inline constexpr int kTileThreads = kTileWarps * kWarpSize;
inline constexpr int kVectorsPerWarp = kQueryTileVectors / kTileWarps;
static_assert(kEntryTile == kWarpSize, "a lane scores one entry of a tile");

// dot[i] = query vector i of the warp · key: the queries are rows of shared memory head_dim
// apart (read as broadcast float4s), the key a row of a tile padded to head_dim + 1 floats so
// that the lanes' reads fall in distinct banks.
__device__ __forceinline__ void TileDots(const float* queries, const float* key, int32_t head_dim,
                                         float (&dot)[kVectorsPerWarp]) {
#pragma unroll
  for (int i = 0; i < kVectorsPerWarp; ++i) dot[i] = 0.0f;
  for (int d = 0; d < head_dim; d += 4) {
    const float4 k4 = make_float4(key[d], key[d + 1], key[d + 2], key[d + 3]);
#pragma unroll
    for (int i = 0; i < kVectorsPerWarp; ++i) {
      dot[i] = Dot4(*reinterpret_cast<const float4*>(queries + i * head_dim + d), k4, dot[i]);
    }
  }
}

}  // namespace kvd::kernels::cuda
