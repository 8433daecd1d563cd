// What the AMX kernels (gemm_amx.cc, attention_rows_amx.cc) share: the tile configuration they
// all run under, every tile register sixteen rows of 64 bytes (a TDPBF16PS's 16 x 16 sums of
// 32 inputs), its loading, and the zeroing and storing of the first tiles of sums. Include only
// from files whose AMX functions carry KVD_AMX_BF16.
#pragma once

#include <cstdint>

#include "kernels/cpu/isa_targets.h"

namespace kvd::kernels::cpu::amx {

// A tile's rows, and the four-byte slots (a pair of bf16 inputs, or one f32 sum) of a row.
inline constexpr int kTileRows = 16;
inline constexpr int kSlotsPerTileRow = 16;
inline constexpr int64_t kTileSlots = kTileRows * kSlotsPerTileRow;
inline constexpr int kTileRowBytes = 64;

// Palette 1 with every tile register sixteen rows of 64 bytes (the layout of ldtilecfg's operand).
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t row_bytes[16] = {};
  uint8_t rows[16] = {};
};

// Loads the configuration into this thread's tile state (which zeroes every tile); each kernel
// loads it on entry, since another kernel may have run on the thread in between.
KVD_AMX_BF16 inline void ConfigureTiles() {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.row_bytes[t] = kTileRowBytes;
    config.rows[t] = kTileRows;
  }
  // GCC's ldtilecfg names only the operand's first eight bytes: the rest must be stored first.
  asm volatile("" ::: "memory");
  _tile_loadconfig(&config);
}

// GCC's tile loads are assembly that does not tell the compiler it reads memory: a kernel calls
// this between the stores that fill a tile's memory and the loads that read it. (The other way
// round, stores that overwrite memory tiles were loaded from stay after those loads because a
// kernel stores its sums, _tile_stored, which GCC declares as writing memory, in between.)
inline __attribute__((always_inline)) void StoresBeforeTileLoads() {
  asm volatile("" ::: "memory");
}

// Zeroes tile registers tmm0 .. tmm(kTiles - 1), at most four.
template <int kTiles>
KVD_AMX_BF16 inline __attribute__((always_inline)) void ZeroTiles() {
  static_assert(kTiles >= 1 && kTiles <= 4);
  _tile_zero(0);
  if constexpr (kTiles > 1) _tile_zero(1);
  if constexpr (kTiles > 2) _tile_zero(2);
  if constexpr (kTiles > 3) _tile_zero(3);
}

// Stores tile registers tmm0 .. tmm(kTiles - 1) one after another from `to`, 1 KiB each.
template <int kTiles>
KVD_AMX_BF16 inline __attribute__((always_inline)) void StoreTiles(float* to) {
  static_assert(kTiles >= 1 && kTiles <= 4);
  _tile_stored(0, to, kTileRowBytes);
  if constexpr (kTiles > 1) _tile_stored(1, to + kTileSlots, kTileRowBytes);
  if constexpr (kTiles > 2) _tile_stored(2, to + 2 * kTileSlots, kTileRowBytes);
  if constexpr (kTiles > 3) _tile_stored(3, to + 3 * kTileSlots, kTileRowBytes);
}

}  // namespace kvd::kernels::cpu::amx
