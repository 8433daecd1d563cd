// The AVX2 variant of the Linear products (matmul.h): tiles of four output features by two rows,
// each weight vector loaded once per tile and used for both rows, the sums kept in registers;
// eight inputs a step for f32 and f16, sixteen for bf16 (split into even and odd weights, x
// regrouped to match), a block of 32 for int8 and two for int4 (unsigned-by-signed byte
// products, _mm256_maddubs_epi16, then pairs of those summed to int32). Products of many rows of
// 16-bit weights run on OpenBLAS's SGEMM over f32 copies of the weights. Compiled for AVX2
// function by function (the target attribute), so that nothing else in the binary needs more
// than the baseline x86-64.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/isa_targets.h"
#include "kernels/cpu/matmul.h"

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
    // Unrolled, so that the sums stay in registers: an indexed loop would keep them in memory
    // through the whole product.
#pragma GCC unroll 8
    for (int rr = 0; rr < kRows; ++rr) {
#pragma GCC unroll 8
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

// bf16 weights sixteen at a time without widening them one by one: a 32-byte load holds sixteen
// weights, each dword an even-indexed one in its low half and the next in its high half, so
// that a shift gives the even weights as floats and a mask the odd ones; x is regrouped once per
// slice (RegroupRows) into sixteen-input groups of its eight even inputs then its eight odd ones.
// Five operations for sixteen weights and a row, where widening took eight. Inputs past the last
// whole group are added one by one.
struct Bf16SplitTiles {
  static constexpr int64_t kGroup = 16;

  // Row r's regrouped inputs at Regrouped() + r * (in / kGroup * kGroup), on the calling thread.
  KVD_AVX2 static void RegroupRows(const MatmulArgs& a) {
    const int64_t grouped = a.in / kGroup * kGroup;
    regrouped.resize(static_cast<size_t>(a.rows * grouped));
    const __m256i even_then_odd = _mm256_set_epi32(7, 5, 3, 1, 6, 4, 2, 0);
    for (int64_t r = 0; r < a.rows; ++r) {
      const float* x = a.x + r * a.in;
      float* out = regrouped.data() + r * grouped;
      for (int64_t i = 0; i < grouped; i += kGroup) {
        // Each half's evens then odds, then the halves' evens together and odds together.
        const __m256 low = _mm256_permutevar8x32_ps(_mm256_loadu_ps(x + i), even_then_odd);
        const __m256 high = _mm256_permutevar8x32_ps(_mm256_loadu_ps(x + i + 8), even_then_odd);
        _mm256_storeu_ps(out + i, _mm256_permute2f128_ps(low, high, 0x20));
        _mm256_storeu_ps(out + i + 8, _mm256_permute2f128_ps(low, high, 0x31));
      }
    }
  }

  template <int kRows, int kOuts>
  KVD_AVX2 static void Run(const MatmulArgs& a, int64_t r, int64_t o) {
    // One row has registers to spare: the even and odd products in separate sums, so that each
    // chain of additions waits half as often.
    constexpr int kSums = kRows == 1 ? 2 : 1;
    __m256 acc[kRows][kOuts][kSums];
#pragma GCC unroll 8
    for (int rr = 0; rr < kRows; ++rr) {
#pragma GCC unroll 8
      for (int k = 0; k < kOuts; ++k) {
#pragma GCC unroll 2
        for (int s = 0; s < kSums; ++s) acc[rr][k][s] = _mm256_setzero_ps();
      }
    }
    const int64_t grouped = a.in / kGroup * kGroup;
    const float* x = regrouped.data() + r * grouped;
    const auto* weight = static_cast<const uint16_t*>(a.weight);
    const bool prefetch = r == 0 && o + 2 * kOuts <= a.first + a.count;
    const auto* next = reinterpret_cast<const char*>(weight + (prefetch ? o + kOuts : o) * a.in);
    const __m256i odd_mask = _mm256_set1_epi32(static_cast<int32_t>(0xffff0000u));
    for (int64_t i = 0; i < grouped; i += kGroup) {
      __m256 x_even[kRows], x_odd[kRows];
#pragma GCC unroll 8
      for (int rr = 0; rr < kRows; ++rr) {
        x_even[rr] = _mm256_loadu_ps(x + rr * grouped + i);
        x_odd[rr] = _mm256_loadu_ps(x + rr * grouped + i + 8);
      }
      // Each output's weights are split as they are used, so that the sums keep their registers.
#pragma GCC unroll 8
      for (int k = 0; k < kOuts; ++k) {
        if (prefetch) _mm_prefetch(next + (k * a.in + i) * 2, _MM_HINT_T0);
        const __m256i bits =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(weight + (o + k) * a.in + i));
        const __m256 even = _mm256_castsi256_ps(_mm256_slli_epi32(bits, 16));
        const __m256 odd = _mm256_castsi256_ps(_mm256_and_si256(bits, odd_mask));
#pragma GCC unroll 8
        for (int rr = 0; rr < kRows; ++rr) {
          acc[rr][k][0] = _mm256_fmadd_ps(even, x_even[rr], acc[rr][k][0]);
          acc[rr][k][kSums - 1] = _mm256_fmadd_ps(odd, x_odd[rr], acc[rr][k][kSums - 1]);
        }
      }
    }
    // Unrolled, so that the sums stay in registers: an indexed loop would keep them in memory
    // through the whole product.
#pragma GCC unroll 8
    for (int rr = 0; rr < kRows; ++rr) {
#pragma GCC unroll 8
      for (int k = 0; k < kOuts; ++k) {
        float sum = HorizontalSum(kSums == 2 ? _mm256_add_ps(acc[rr][k][0], acc[rr][k][kSums - 1])
                                             : acc[rr][k][0]);
        for (int64_t i = grouped; i < a.in; ++i) {
          sum += a.x[(r + rr) * a.in + i] * Bf16Weights::At(a.weight, (o + k) * a.in + i);
        }
        a.out[(r + rr) * a.out_stride + o + k] = sum;
      }
    }
  }

  static inline thread_local std::vector<float> regrouped;
};

// The block formats, as the unsigned-by-signed byte products _mm256_maddubs_epi16 takes, Dot
// leaving a step's integer sums in eight dwords. int8, a block a step: x's magnitude (once per
// block and row, for every output) times w carrying x's sign (_mm256_sign_epi8), so that each
// output pays one sign operation where |w| and x·sign(w) paid two; all eight dwords are the
// block's. int4, two blocks a step: one 32-byte load holds blocks b and b + 1 in its two lanes,
// whose low nibbles are each block's first sixteen weights and whose high nibbles its last
// sixteen, so that the activations are regrouped to match (once per step and row) and the
// weights need only a shift and two masks; dwords 0-3 are block b's, 4-7 block b + 1's, and the
// two byte products are added as int16 (at most 2 · 2 · 15 · 127 = 7,620, no saturation).
struct Int8Format {
  static constexpr bool kHasOffset = false;
  static constexpr int kBlocksPerStep = 1;
  using Operands = __m256i;  // the block's weights
  struct Activations {
    __m256i magnitude;  // |x|
    __m256i x;
  };
  KVD_AVX2 static Operands Load(const ConstQuantizedRow& row, int64_t b, int) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row.q + b * kQuantBlock));
  }
  KVD_AVX2 static Activations LoadActivations(const int8_t* q, int) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
    return {_mm256_abs_epi8(x), x};
  }
  KVD_AVX2 static __m256i Dot(const Operands& w, const Activations& x) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(x.magnitude, _mm256_sign_epi8(w, x.x)),
                             _mm256_set1_epi16(1));
  }
  static const unsigned char* Prefetched(const ConstQuantizedRow& row, int64_t b) {
    return row.q + b * kQuantBlock;
  }
};

struct Int4Format {
  static constexpr bool kHasOffset = true;
  static constexpr int kBlocksPerStep = 2;
  struct Operands {
    __m256i first_halves;   // lane l: the first sixteen weights of block b + l
    __m256i second_halves;  // lane l: its last sixteen
  };
  using Activations = Operands;
  // Blocks [b, b + blocks) of a row (blocks 1 or 2; a missing second block reads as zeros).
  KVD_AVX2 static Operands Load(const ConstQuantizedRow& row, int64_t b, int blocks) {
    const auto* from = row.q + b * (kQuantBlock / 2);
    const __m256i packed =
        blocks == 2
            ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from))
            : _mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(from)));
    const __m256i nibble = _mm256_set1_epi8(15);
    return {_mm256_and_si256(packed, nibble),
            _mm256_and_si256(_mm256_srli_epi16(packed, 4), nibble)};
  }
  KVD_AVX2 static Activations LoadActivations(const int8_t* q, int blocks) {
    const __m256i early = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
    const __m256i late = blocks == 2
                             ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + kQuantBlock))
                             : _mm256_setzero_si256();
    return {_mm256_permute2x128_si256(early, late, 0x20),
            _mm256_permute2x128_si256(early, late, 0x31)};
  }
  KVD_AVX2 static __m256i Dot(const Operands& w, const Activations& x) {
    const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(w.first_halves, x.first_halves),
                                           _mm256_maddubs_epi16(w.second_halves, x.second_halves));
    return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
  }
  static const unsigned char* Prefetched(const ConstQuantizedRow& row, int64_t b) {
    return row.q + b * (kQuantBlock / 2);
  }
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

// Which of a chunk's eight scales each dword of a step's sums takes: block j's in all eight, or
// for steps of two blocks j's in dwords 0-3 and j + 1's in 4-7.
template <int kBlocksPerStep>
KVD_AVX2 __m256i StepScaleIndex(int64_t j) {
  const __m256i first = _mm256_set1_epi32(static_cast<int32_t>(j));
  if constexpr (kBlocksPerStep == 1) return first;
  return _mm256_add_epi32(first, _mm256_set_epi32(1, 1, 1, 1, 0, 0, 0, 0));
}

// The combined scales of a chunk, eight a (row, output) pair, kept in memory (the registers are
// the sums'), and a step's of them under its dwords: a broadcast load for a step of one block, a
// load and a permute for two.
template <int kRows, int kOuts>
struct ChunkScales {
  alignas(32) float values[kRows][kOuts][kChunk];
  KVD_AVX2 void Set(int rr, int k, __m256 v) { _mm256_store_ps(values[rr][k], v); }
  template <int kBlocksPerStep>
  KVD_AVX2 __m256 Step(int rr, int k, int64_t j, __m256i index) const {
    if constexpr (kBlocksPerStep == 1) return _mm256_broadcast_ss(&values[rr][k][j]);
    return _mm256_permutevar8x32_ps(_mm256_load_ps(values[rr][k]), index);
  }
};

// Block-format tiles: Run computes output features [o, o + kOuts) of rows [r, r + kRows), a
// chunk of blocks at a time: first every (row, output) pair's eight combined scales
// scale_w · scale_x (and int4's offset terms, whole vectors of them, added to the sums), then one
// fused multiply-add a step and pair.
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
#pragma GCC unroll 8
    for (int rr = 0; rr < kRows; ++rr) {
#pragma GCC unroll 8
      for (int k = 0; k < kOuts; ++k) acc[rr][k] = _mm256_setzero_ps();
    }
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
#pragma GCC unroll 8
        for (int rr = 0; rr < kRows; ++rr) {
          const int64_t at = (r + rr) * blocks + chunk;
          scales.Set(rr, k, _mm256_mul_ps(w_scale, LoadF32(&act.scales[at], count)));
          // int4's offsets meet the activations' sums, into the same sums as the products.
          if constexpr (Format::kHasOffset) {
            acc[rr][k] = _mm256_fmadd_ps(LoadF16(rows[k].offsets + chunk, count),
                                         LoadF32(&act.sums[at], count), acc[rr][k]);
          }
        }
      }
      for (int64_t j = 0; j < count; j += Format::kBlocksPerStep) {
        const int64_t b = chunk + j;
        const int step_blocks =
            static_cast<int>(std::min<int64_t>(Format::kBlocksPerStep, count - j));
        typename Format::Activations x[kRows];
#pragma GCC unroll 8
        for (int rr = 0; rr < kRows; ++rr) {
          x[rr] = Format::LoadActivations(act.q.data() + (r + rr) * act.in + b * kQuantBlock,
                                          step_blocks);
        }
        const __m256i index = StepScaleIndex<Format::kBlocksPerStep>(j);
        // Each output's weights are loaded as they are used, so that the sums keep their
        // registers.
#pragma GCC unroll 8
        for (int k = 0; k < kOuts; ++k) {
          if (prefetch) {
            _mm_prefetch(reinterpret_cast<const char*>(Format::Prefetched(next_rows[k], b)),
                         _MM_HINT_T0);
          }
          const typename Format::Operands w = Format::Load(rows[k], b, step_blocks);
#pragma GCC unroll 8
          for (int rr = 0; rr < kRows; ++rr) {
            acc[rr][k] = _mm256_fmadd_ps(
                _mm256_cvtepi32_ps(Format::Dot(w, x[rr])),
                scales.template Step<Format::kBlocksPerStep>(rr, k, j, index), acc[rr][k]);
          }
        }
      }
    }
    // Unrolled, so that the sums stay in registers: an indexed loop would keep them in memory
    // through the whole product.
#pragma GCC unroll 8
    for (int rr = 0; rr < kRows; ++rr) {
#pragma GCC unroll 8
      for (int k = 0; k < kOuts; ++k) {
        a.out[(r + rr) * a.out_stride + o + k] = HorizontalSum(acc[rr][k]);
      }
    }
  }
};

// Products of many rows of bf16 or f16 weights: the slice's weights widened to f32, a bounded
// group of output features at a time, for OpenBLAS's SGEMM, which keeps the FMA units busier than
// the tiles from about 64 rows on (below, widening and packing cost more than it gains:
// docs/benchmarks.md, "The AVX2 machine: 16-bit prompts on SGEMM"). Widening is exact, so the
// products are those of the tiles, added in another order.
constexpr int64_t kMinRowsOnSgemm = 64;
// The f32 copy's size: a group stays in L2 while SGEMM packs it.
constexpr int64_t kWidenedBytes = int64_t{512} << 10;

template <class Weights>
KVD_AVX2 void WidenRows(const void* weight, int64_t first, int64_t count, int64_t in, float* out) {
  const int64_t total = count * in;
  const int64_t start = first * in;
  int64_t i = 0;
  for (; i + 8 <= total; i += 8) _mm256_storeu_ps(out + i, Weights::Load(weight, start + i));
  for (; i < total; ++i) out[i] = Weights::At(weight, start + i);
}

template <class Weights>
KVD_AVX2 void RunOnSgemm(const MatmulArgs& a) {
  thread_local std::vector<float> widened;
  const int64_t group = std::max<int64_t>(1, kWidenedBytes / (a.in * sizeof(float)));
  widened.resize(static_cast<size_t>(std::min(group, a.count) * a.in));
  for (int64_t o = a.first; o < a.first + a.count; o += group) {
    const int64_t count = std::min(group, a.first + a.count - o);
    WidenRows<Weights>(a.weight, o, count, a.in, widened.data());
    SingleThreadedSgemm(a.x, a.rows, a.in, widened.data(), count, a.out + o, a.out_stride);
  }
}

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
  if (a.rows >= kMinRowsOnSgemm && a.dtype == DType::kBF16) return RunOnSgemm<Bf16Weights>(a);
  if (a.rows >= kMinRowsOnSgemm && a.dtype == DType::kF16) return RunOnSgemm<F16Weights>(a);
  switch (a.dtype) {
    case DType::kF32:
      return RunTiles<ElementTiles<F32Weights>>(a);
    case DType::kBF16:
      Bf16SplitTiles::RegroupRows(a);
      return RunTiles<Bf16SplitTiles>(a);
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
