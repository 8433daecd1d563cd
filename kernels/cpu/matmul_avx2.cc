// The AVX2 variant of the Linear products (matmul.h): tiles of four output features by two rows,
// each weight vector loaded once per tile and used for both rows; eight inputs a step for
// element types, a block of 32 for quantized formats (an unsigned-by-signed byte product,
// _mm256_maddubs_epi16, then pairs of those summed to int32). Compiled for AVX2 function by
// function (the target attribute), so that nothing else in the binary needs more than the
// baseline x86-64.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/matmul.h"

#define KVD_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace kvd::kernels::cpu {
namespace {

// Eight weights from index `at` on, as floats; and one, for the inputs past the last full
// vector.
struct F32Weights {
  static constexpr int64_t kBytes = 4;
  KVD_AVX2 static __m256 Load(const void* base, int64_t at) {
    return _mm256_loadu_ps(static_cast<const float*>(base) + at);
  }
  static float At(const void* base, int64_t at) { return static_cast<const float*>(base)[at]; }
};

struct Bf16Weights {
  static constexpr int64_t kBytes = 2;
  KVD_AVX2 static __m256 Load(const void* base, int64_t at) {
    const __m128i bits =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + at));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
  }
  static float At(const void* base, int64_t at) {
    uint16_t bits;
    std::memcpy(&bits, static_cast<const uint16_t*>(base) + at, sizeof(bits));
    return BF16ToFloat(bits);
  }
};

struct F16Weights {
  static constexpr int64_t kBytes = 2;
  KVD_AVX2 static __m256 Load(const void* base, int64_t at) {
    return _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + at)));
  }
  static float At(const void* base, int64_t at) {
    uint16_t bits;
    std::memcpy(&bits, static_cast<const uint16_t*>(base) + at, sizeof(bits));
    return F16ToFloat(bits);
  }
};

KVD_AVX2 float HorizontalSum(__m256 v) {
  const __m128 pairs = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 halves = _mm_add_ps(pairs, _mm_movehl_ps(pairs, pairs));
  return _mm_cvtss_f32(_mm_add_ss(halves, _mm_movehdup_ps(halves)));
}

// Element-type tiles: Run computes output features [o, o + kOuts) of rows [r, r + kRows).
template <class Weights>
struct ElementTiles {
  template <int kRows, int kOuts>
  KVD_AVX2 static void Run(const MatmulArgs& a, int64_t r, int64_t o) {
    __m256 acc[kRows][kOuts];
#pragma GCC unroll 8
    for (int rr = 0; rr < kRows; ++rr) {
#pragma GCC unroll 8
      for (int k = 0; k < kOuts; ++k) acc[rr][k] = _mm256_setzero_ps();
    }
    const float* x = a.x + r * a.in;
    const int64_t vector_end = a.in / 8 * 8;
    // As for block formats: the first pass over a tile prefetches the slice's next tile.
    const bool prefetch = r == 0 && o + 2 * kOuts <= a.first + a.count;
    const auto* next =
        static_cast<const char*>(a.weight) + (prefetch ? o + kOuts : o) * a.in * Weights::kBytes;
    for (int64_t i = 0; i < vector_end; i += 8) {
      __m256 w[kOuts];
#pragma GCC unroll 8
      for (int k = 0; k < kOuts; ++k) {
        if (prefetch) _mm_prefetch(next + (k * a.in + i) * Weights::kBytes, _MM_HINT_T0);
        w[k] = Weights::Load(a.weight, (o + k) * a.in + i);
      }
#pragma GCC unroll 8
      for (int rr = 0; rr < kRows; ++rr) {
        const __m256 xv = _mm256_loadu_ps(x + rr * a.in + i);
#pragma GCC unroll 8
        for (int k = 0; k < kOuts; ++k) acc[rr][k] = _mm256_fmadd_ps(w[k], xv, acc[rr][k]);
      }
    }
    for (int rr = 0; rr < kRows; ++rr) {
      for (int k = 0; k < kOuts; ++k) {
        float sum = HorizontalSum(acc[rr][k]);
        for (int64_t i = vector_end; i < a.in; ++i) {
          sum += x[rr * a.in + i] * Weights::At(a.weight, (o + k) * a.in + i);
        }
        a.out[(r + rr) * a.out_stride + o + k] = sum;
      }
    }
  }
};

// The block formats: a block's 32 weights as bytes, and the unsigned-by-signed byte operands
// that give the products w · x. Signed weights (int8) go through the sign trick: |w| times x with
// w's sign; int4's unsigned steps meet x as it is, their offsets are added apart.
struct Int8Format {
  static constexpr bool kHasOffset = false;
  static constexpr int64_t kWeightBytes = kQuantBlock;  // a block's weights
  KVD_AVX2 static __m256i Weights(const ConstQuantizedRow& row, int64_t b) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row.q + b * kQuantBlock));
  }
  KVD_AVX2 static __m256i Unsigned(__m256i w) { return _mm256_sign_epi8(w, w); }
  KVD_AVX2 static __m256i Signed(__m256i x, __m256i w) { return _mm256_sign_epi8(x, w); }
};

struct Int4Format {
  static constexpr bool kHasOffset = true;
  static constexpr int64_t kWeightBytes = kQuantBlock / 2;
  KVD_AVX2 static __m256i Weights(const ConstQuantizedRow& row, int64_t b) {
    const __m128i packed =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(row.q + b * (kQuantBlock / 2)));
    const __m128i nibble = _mm_set1_epi8(15);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), nibble),
                            _mm_and_si128(packed, nibble));
  }
  KVD_AVX2 static __m256i Unsigned(__m256i w) { return w; }
  KVD_AVX2 static __m256i Signed(__m256i x, __m256i) { return x; }
};

// The blocks a tile handles at once: their scales are converted eight at a time.
constexpr int64_t kChunk = 8;

// `count` (at most kChunk) f16 values from `bits` as floats, zeros after them.
KVD_AVX2 __m256 LoadF16(const uint16_t* bits, int64_t count) {
  if (count == kChunk)
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bits)));
  uint16_t padded[kChunk] = {};
  std::memcpy(padded, bits, static_cast<size_t>(count) * sizeof(uint16_t));
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(padded)));
}

// `count` (at most kChunk) floats, zeros after them.
KVD_AVX2 __m256 LoadF32(const float* values, int64_t count) {
  if (count == kChunk) return _mm256_loadu_ps(values);
  float padded[kChunk] = {};
  std::memcpy(padded, values, static_cast<size_t>(count) * sizeof(float));
  return _mm256_loadu_ps(padded);
}

// The combined scales of a chunk, eight a (row, output) pair, and each broadcast in turn: one row
// keeps them in registers (a permute a block), more rows in memory (a broadcast load a block),
// where the registers are needed for the accumulators; each measured the faster for its tile.
template <int kRows, int kOuts>
struct ChunkScales {
  alignas(32) float values[kRows][kOuts][kChunk];
  KVD_AVX2 void Set(int rr, int k, __m256 v) { _mm256_store_ps(values[rr][k], v); }
  KVD_AVX2 __m256 Broadcast(int rr, int k, int64_t j) const {
    return _mm256_broadcast_ss(&values[rr][k][j]);
  }
};

template <int kOuts>
struct ChunkScales<1, kOuts> {
  __m256 values[kOuts];
  KVD_AVX2 void Set(int, int k, __m256 v) { values[k] = v; }
  KVD_AVX2 __m256 Broadcast(int, int k, int64_t j) const {
    return _mm256_permutevar8x32_ps(values[k], _mm256_set1_epi32(static_cast<int32_t>(j)));
  }
};

// Block-format tiles: Run computes output features [o, o + kOuts) of rows [r, r + kRows), a
// chunk of blocks at a time: first every (row, output) pair's eight combined scales
// scale_w · scale_x (and int4's offset terms, whole vectors of them), then one fused
// multiply-add a block and pair.
template <class Format>
struct BlockTiles {
  template <int kRows, int kOuts>
  KVD_AVX2 static void Run(const MatmulArgs& a, int64_t r, int64_t o) {
    const QuantizedActivations& act = *a.activations;
    const int64_t blocks = act.blocks_per_row();
    // The first pass over a tile prefetches the next tile of the slice (the same block of each
    // row, as it goes), so that its memory is on its way while this one computes.
    const bool prefetch = r == 0 && o + 2 * kOuts <= a.first + a.count;
    const QuantizedTileRows<kOuts> tile = ViewQuantizedTileRows<kOuts>(a, o, prefetch);
    const ConstQuantizedRow(&rows)[kOuts] = tile.rows;
    const ConstQuantizedRow(&next_rows)[kOuts] = tile.next;
    __m256 acc[kRows][kOuts];
    __m256 offset_acc[kRows][kOuts];
#pragma GCC unroll 8
    for (int rr = 0; rr < kRows; ++rr) {
#pragma GCC unroll 8
      for (int k = 0; k < kOuts; ++k) acc[rr][k] = offset_acc[rr][k] = _mm256_setzero_ps();
    }
    const __m256i ones = _mm256_set1_epi16(1);
    ChunkScales<kRows, kOuts> scales;
    for (int64_t chunk = 0; chunk < blocks; chunk += kChunk) {
      const int64_t count = std::min(kChunk, blocks - chunk);
#pragma GCC unroll 8
      for (int k = 0; k < kOuts; ++k) {
        if (prefetch) {
          _mm_prefetch(reinterpret_cast<const char*>(next_rows[k].scales + chunk), _MM_HINT_T0);
          if constexpr (Format::kHasOffset) {
            _mm_prefetch(reinterpret_cast<const char*>(next_rows[k].offsets + chunk), _MM_HINT_T0);
          }
        }
        const __m256 w_scale = LoadF16(rows[k].scales + chunk, count);
        __m256 w_offset;
        if constexpr (Format::kHasOffset) w_offset = LoadF16(rows[k].offsets + chunk, count);
#pragma GCC unroll 8
        for (int rr = 0; rr < kRows; ++rr) {
          const int64_t at = (r + rr) * blocks + chunk;
          scales.Set(rr, k, _mm256_mul_ps(w_scale, LoadF32(&act.scales[at], count)));
          if constexpr (Format::kHasOffset) {
            offset_acc[rr][k] =
                _mm256_fmadd_ps(w_offset, LoadF32(&act.sums[at], count), offset_acc[rr][k]);
          }
        }
      }
      for (int64_t j = 0; j < count; ++j) {
        const int64_t b = chunk + j;
        __m256i w[kOuts], w_unsigned[kOuts];
#pragma GCC unroll 8
        for (int k = 0; k < kOuts; ++k) {
          if (prefetch) {
            _mm_prefetch(reinterpret_cast<const char*>(next_rows[k].q + b * Format::kWeightBytes),
                         _MM_HINT_T0);
          }
          w[k] = Format::Weights(rows[k], b);
          w_unsigned[k] = Format::Unsigned(w[k]);
        }
#pragma GCC unroll 8
        for (int rr = 0; rr < kRows; ++rr) {
          const __m256i x = _mm256_loadu_si256(
              reinterpret_cast<const __m256i*>(act.q.data() + (r + rr) * act.in + b * kQuantBlock));
#pragma GCC unroll 8
          for (int k = 0; k < kOuts; ++k) {
            const __m256i dot = _mm256_madd_epi16(
                _mm256_maddubs_epi16(w_unsigned[k], Format::Signed(x, w[k])), ones);
            acc[rr][k] =
                _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), scales.Broadcast(rr, k, j), acc[rr][k]);
          }
        }
      }
    }
    for (int rr = 0; rr < kRows; ++rr) {
      for (int k = 0; k < kOuts; ++k) {
        a.out[(r + rr) * a.out_stride + o + k] = HorizontalSum(
            Format::kHasOffset ? _mm256_add_ps(acc[rr][k], offset_acc[rr][k]) : acc[rr][k]);
      }
    }
  }
};

// Tiles over the slice: output tiles outside, rows inside, so that a tile's weights stay in L1
// across the rows. Tiles::Run<kRows, kOuts> computes one tile.
template <class Tiles>
KVD_AVX2 void RunTiles(const MatmulArgs& a) {
  const int64_t end = a.first + a.count;
  const int64_t tiled_end = a.first + a.count / 4 * 4;
  for (int64_t o = a.first; o < tiled_end; o += 4) {
    int64_t r = 0;
    for (; r + 2 <= a.rows; r += 2) Tiles::template Run<2, 4>(a, r, o);
    if (r < a.rows) Tiles::template Run<1, 4>(a, r, o);
  }
  for (int64_t o = tiled_end; o < end; ++o) {
    int64_t r = 0;
    for (; r + 2 <= a.rows; r += 2) Tiles::template Run<2, 1>(a, r, o);
    if (r < a.rows) Tiles::template Run<1, 1>(a, r, o);
  }
}

void Run(const MatmulArgs& a) {
  switch (a.dtype) {
    case DType::kF32:
      return RunTiles<ElementTiles<F32Weights>>(a);
    case DType::kBF16:
      return RunTiles<ElementTiles<Bf16Weights>>(a);
    case DType::kF16:
      return RunTiles<ElementTiles<F16Weights>>(a);
    case DType::kInt8:
      return RunTiles<BlockTiles<Int8Format>>(a);
    case DType::kInt4:
      return RunTiles<BlockTiles<Int4Format>>(a);
  }
}

}  // namespace

MatmulVariant Avx2Matmul() { return {"avx2", Run}; }

}  // namespace kvd::kernels::cpu
