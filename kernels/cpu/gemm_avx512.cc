#include "kernels/cpu/gemm_avx512.h"

#include <algorithm>
#include <vector>

#include "base/check.h"
#include "kernels/cpu/avx512_vectors.h"

namespace kvd::kernels::cpu {
namespace {

// A panel: kPanelElements elements of kPanelOutputs output features, element-major, 24 KiB in
// L1 (half of this CPU kind's 48 KiB, so that the rows' lines fit beside it). An element is four
// bytes: one input as an f32, or two neighbouring inputs as a pair of bf16.
constexpr int kPanelVectors = 3;
constexpr int64_t kPanelOutputs = 16 * kPanelVectors;
static_assert(kPanelOutputs == kGemmPanelOutputs);
constexpr int64_t kPanelElements = 128;
// Rows a tile reads the panel for: 24 accumulators, with three weight vectors and a broadcast
// that is 28 of the 32 registers.
constexpr int kTileRows = 8;
// Rows whose elements for one panel stay in L2 while every panel of the slice passes over them:
// 1 MiB.
constexpr int64_t kRowsPerBlock = (int64_t{1} << 20) / (kPanelElements * 4);

// panel[e * kPanelOutputs + j]: element e of output feature o + j.
alignas(64) thread_local float panel[kPanelElements * kPanelOutputs];
// The rows of a block, a panel's elements, tile by tile: element e of row r + rr of the tile
// from r on at packed_rows[(r - row_begin) * kPanelElements + e * kTileRows + rr]. Grown on a
// thread's first product, so that threads that never multiply hold none.
thread_local std::vector<float> packed_rows;

// Transposes the 16 x 16 block in v: v[j] lane i becomes v[i] lane j.
KVD_AVX512 inline __attribute__((always_inline)) void Transpose16(__m512 (&v)[16]) {
  __m512 t[16];
#pragma GCC unroll 16
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]);
  }
  // u[4g + m], 128-bit lane L: element 4L + m of rows 4g .. 4g + 3.
  __m512 u[16];
#pragma GCC unroll 16
  for (int g = 0; g < 4; ++g) {
    u[4 * g + 0] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
    u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xee);
    u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
    u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xee);
  }
#pragma GCC unroll 16
  for (int m = 0; m < 4; ++m) {
    const __m512 low_even = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x88);
    const __m512 low_odd = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xdd);
    const __m512 high_even = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x88);
    const __m512 high_odd = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xdd);
    v[m] = _mm512_shuffle_f32x4(low_even, high_even, 0x88);
    v[4 + m] = _mm512_shuffle_f32x4(low_odd, high_odd, 0x88);
    v[8 + m] = _mm512_shuffle_f32x4(low_even, high_even, 0xdd);
    v[12 + m] = _mm512_shuffle_f32x4(low_odd, high_odd, 0xdd);
  }
}

// Stores the sixteen elements from `at` on of rows [r, r + 16) (`tile_rows` of them real), row
// r + j's in v[j], into packed_rows from `first` (row r's tile): a 16 x 16 transpose leaves the
// sixteen rows' element i in vector i, the first tile's half in its lower 256 bits.
KVD_AVX512 inline __attribute__((always_inline)) void StoreSixteenRows(__m512 (&v)[16],
                                                                       float* first, int64_t at,
                                                                       int64_t tile_rows) {
  Transpose16(v);
  float* second = first + kTileRows * kPanelElements;
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) {
    _mm256_storeu_ps(first + (at + i) * kTileRows, _mm512_castps512_ps256(v[i]));
    if (tile_rows > kTileRows) {
      _mm256_storeu_ps(second + (at + i) * kTileRows, _mm512_extractf32x8_ps(v[i], 1));
    }
  }
}

// Stores a tile's sums into rows [r, r + kRows) of output features [o, o + width), or adds them
// to what earlier panels of inputs left there.
template <int kRows, int kVectors>
KVD_AVX512 inline __attribute__((always_inline)) void StoreTile(
    const __m512 (&acc)[kRows][kVectors], const MatmulArgs& a, int64_t r, int64_t o, int64_t width,
    bool accumulate) {
#pragma GCC unroll 8
  for (int rr = 0; rr < kRows; ++rr) {
    float* out = a.out + (r + rr) * a.out_stride + o;
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      const __mmask16 mask = v + 1 == kVectors ? TailMask(width - 16 * v) : __mmask16{0xffff};
      __m512 sum = acc[rr][v];
      if (accumulate) sum = _mm512_add_ps(sum, _mm512_maskz_loadu_ps(mask, out + 16 * v));
      _mm512_mask_storeu_ps(out + 16 * v, mask, sum);
    }
  }
}

// Fills the panel with inputs [k_begin, k_end) of output features [o, o + width) as f32, zero
// past either end, sixteen features at a time: a 16 x 16 transpose of floats, sixteen inputs a
// step.
template <class Weights>
KVD_AVX512 void PackF32Panel(const MatmulArgs& a, int64_t o, int64_t width, int64_t k_begin,
                             int64_t k_end) {
  for (int64_t g = 0; g * 16 < width; ++g) {
    const int64_t features = std::min<int64_t>(16, width - g * 16);
    for (int64_t k = k_begin; k < k_end; k += 16) {
      const __mmask16 mask = TailMask(k_end - k);
      __m512 v[16];
#pragma GCC unroll 16
      for (int j = 0; j < 16; ++j) {
        v[j] = j < features
                   ? Weights::template Load<true>(a.weight, (o + g * 16 + j) * a.in + k, mask)
                   : _mm512_setzero_ps();
      }
      Transpose16(v);
      float* to = &panel[(k - k_begin) * kPanelOutputs + g * 16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) _mm512_store_ps(to + i * kPanelOutputs, v[i]);
    }
  }
}

// The sixteen pairs of bf16 weights from input k on of output features [o, o + 16) (`features`
// of them real), transposed: v[i] holds each feature's pair i, zero past k_end.
KVD_AVX512 inline __attribute__((always_inline)) void LoadBf16Pairs(const MatmulArgs& a, int64_t o,
                                                                    int64_t features, int64_t k,
                                                                    int64_t k_end,
                                                                    __m512 (&v)[16]) {
  const auto* weight = static_cast<const uint16_t*>(a.weight);
  const int64_t left = k_end - k;
  const __mmask32 mask = left >= 32 ? ~__mmask32{0} : (__mmask32{1} << left) - 1;
#pragma GCC unroll 16
  for (int j = 0; j < 16; ++j) {
    v[j] = j < features
               ? _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(mask, weight + (o + j) * a.in + k))
               : _mm512_setzero_ps();
  }
  Transpose16(v);
}

// bf16 weights widened to f32 thirty-two inputs a step: the transpose moves pairs of
// neighbouring inputs as one 32-bit lane, and each pair then widens to two floats with a shift
// and a mask (a bf16 is an f32's upper half), half the shuffles a weight of the float transpose.
template <>
KVD_AVX512 void PackF32Panel<Bf16Weights>(const MatmulArgs& a, int64_t o, int64_t width,
                                          int64_t k_begin, int64_t k_end) {
  const __m512i upper = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  for (int64_t g = 0; g * 16 < width; ++g) {
    const int64_t features = std::min<int64_t>(16, width - g * 16);
    for (int64_t k = k_begin; k < k_end; k += 32) {
      __m512 v[16];
      LoadBf16Pairs(a, o + g * 16, features, k, k_end, v);
      float* to = &panel[(k - k_begin) * kPanelOutputs + g * 16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) {
        const __m512i pair = _mm512_castps_si512(v[i]);
        _mm512_store_ps(to + 2 * i * kPanelOutputs,
                        _mm512_castsi512_ps(_mm512_slli_epi32(pair, 16)));
        _mm512_store_ps(to + (2 * i + 1) * kPanelOutputs,
                        _mm512_castsi512_ps(_mm512_and_si512(pair, upper)));
      }
    }
  }
}

// f32 elements: each input of a row broadcast against sixteen features' weights, one FMA per
// input and feature.
template <class Weights>
struct F32Elements {
  static constexpr int64_t kInputsPerElement = 1;
  static constexpr int64_t kWeightBytes = Weights::kBytes;

  KVD_AVX512 static void PackRows(const MatmulArgs& a, int64_t row_begin, int64_t row_end,
                                  int64_t k_begin, int64_t k_end) {
    for (int64_t r = row_begin; r < row_end; r += 2 * kTileRows) {
      const int64_t tile_rows = std::min<int64_t>(2 * kTileRows, row_end - r);
      float* first = &packed_rows[(r - row_begin) * kPanelElements];
      for (int64_t k = k_begin; k < k_end; k += 16) {
        const __mmask16 mask = TailMask(k_end - k);
        __m512 v[16];
#pragma GCC unroll 16
        for (int j = 0; j < 16; ++j) {
          v[j] = j < tile_rows ? _mm512_maskz_loadu_ps(mask, a.x + (r + j) * a.in + k)
                               : _mm512_setzero_ps();
        }
        StoreSixteenRows(v, first, k - k_begin, tile_rows);
      }
    }
  }

  KVD_AVX512 static void PackPanel(const MatmulArgs& a, int64_t o, int64_t width, int64_t k_begin,
                                   int64_t k_end) {
    PackF32Panel<Weights>(a, o, width, k_begin, k_end);
  }

  template <int kRows, int kVectors>
  KVD_AVX512 static void Tile(const MatmulArgs& a, int64_t r, int64_t o, int64_t width,
                              int64_t elements, bool accumulate) {
    __m512 acc[kRows][kVectors];
#pragma GCC unroll 8
    for (int rr = 0; rr < kRows; ++rr) {
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) acc[rr][v] = _mm512_setzero_ps();
    }
    const float* x = &packed_rows[(r % kRowsPerBlock) * kPanelElements];
    const float* w = panel;
    for (int64_t e = 0; e < elements; ++e, w += kPanelOutputs, x += kTileRows) {
      __m512 weights[kVectors];
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) weights[v] = _mm512_load_ps(w + 16 * v);
#pragma GCC unroll 8
      for (int rr = 0; rr < kRows; ++rr) {
        const __m512 input = _mm512_set1_ps(x[rr]);
#pragma GCC unroll 4
        for (int v = 0; v < kVectors; ++v)
          acc[rr][v] = _mm512_fmadd_ps(weights[v], input, acc[rr][v]);
      }
    }
    StoreTile(acc, a, r, o, width, accumulate);
  }
};

// bf16 weights against rows rounded to bf16 (to nearest, ties to even), for CPUs with
// AVX512-BF16: an element is a pair of neighbouring inputs, and one vdpbf16ps adds both
// products (exact in f32) of sixteen features, twice an FMA's work.
struct Bf16PairElements {
  static constexpr int64_t kInputsPerElement = 2;
  static constexpr int64_t kWeightBytes = 2;

  KVD_AVX512_BF16 static void PackRows(const MatmulArgs& a, int64_t row_begin, int64_t row_end,
                                       int64_t k_begin, int64_t k_end) {
    for (int64_t r = row_begin; r < row_end; r += 2 * kTileRows) {
      const int64_t tile_rows = std::min<int64_t>(2 * kTileRows, row_end - r);
      float* first = &packed_rows[(r - row_begin) * kPanelElements];
      for (int64_t k = k_begin; k < k_end; k += 32) {
        const int64_t left = k_end - k;
        const __mmask16 low = TailMask(left);
        const __mmask16 high = left > 16 ? TailMask(left - 16) : __mmask16{0};
        __m512 v[16];
#pragma GCC unroll 16
        for (int j = 0; j < 16; ++j) {
          v[j] = _mm512_setzero_ps();
          if (j >= tile_rows) continue;
          const float* row = a.x + (r + j) * a.in + k;
          const __m512bh pairs = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(high, row + 16),
                                                     _mm512_maskz_loadu_ps(low, row));
          v[j] = reinterpret_cast<const __m512&>(pairs);
        }
        StoreSixteenRows(v, first, (k - k_begin) / 2, tile_rows);
      }
    }
  }

  KVD_AVX512_BF16 static void PackPanel(const MatmulArgs& a, int64_t o, int64_t width,
                                        int64_t k_begin, int64_t k_end) {
    for (int64_t g = 0; g * 16 < width; ++g) {
      for (int64_t k = k_begin; k < k_end; k += 32) {
        __m512 v[16];
        LoadBf16Pairs(a, o + g * 16, std::min<int64_t>(16, width - g * 16), k, k_end, v);
        float* to = &panel[(k - k_begin) / 2 * kPanelOutputs + g * 16];
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i) _mm512_store_ps(to + i * kPanelOutputs, v[i]);
      }
    }
  }

  template <int kRows, int kVectors>
  KVD_AVX512_BF16 static void Tile(const MatmulArgs& a, int64_t r, int64_t o, int64_t width,
                                   int64_t elements, bool accumulate) {
    __m512 acc[kRows][kVectors];
#pragma GCC unroll 8
    for (int rr = 0; rr < kRows; ++rr) {
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) acc[rr][v] = _mm512_setzero_ps();
    }
    const float* x = &packed_rows[(r % kRowsPerBlock) * kPanelElements];
    const float* w = panel;
    for (int64_t e = 0; e < elements; ++e, w += kPanelOutputs, x += kTileRows) {
      __m512bh weights[kVectors];
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) {
        const __m512 bits = _mm512_load_ps(w + 16 * v);
        weights[v] = reinterpret_cast<const __m512bh&>(bits);
      }
#pragma GCC unroll 8
      for (int rr = 0; rr < kRows; ++rr) {
        const __m512 pair = _mm512_set1_ps(x[rr]);
        const __m512bh input = reinterpret_cast<const __m512bh&>(pair);
#pragma GCC unroll 4
        for (int v = 0; v < kVectors; ++v)
          acc[rr][v] = _mm512_dpbf16_ps(acc[rr][v], weights[v], input);
      }
    }
    StoreTile(acc, a, r, o, width, accumulate);
  }
};

// The cache lines of the weights the next panel packs, fetched a share at a time while the
// current panel's row tiles run, so that packing finds them in L1 rather than in memory.
struct NextPanelLines {
  const char* first = nullptr;  // the first feature's first input; null: no next panel
  int64_t row_bytes = 0;
  int64_t lines_per_row = 0;
  int64_t count = 0;  // features x lines_per_row

  void Fetch(int64_t begin, int64_t end) const {
    for (int64_t line = begin; line < std::min(end, count); ++line) {
      _mm_prefetch(first + line / lines_per_row * row_bytes + line % lines_per_row * 64,
                   _MM_HINT_T0);
    }
  }
};

NextPanelLines LinesOfPanel(const MatmulArgs& a, int64_t weight_bytes, int64_t o, int64_t end,
                            int64_t k_begin, int64_t k_end) {
  if (o >= end) return {};
  const int64_t features = std::min(kPanelOutputs, end - o);
  const int64_t lines_per_row = ((k_end - k_begin) * weight_bytes + 63) / 64;
  return {.first = static_cast<const char*>(a.weight) + (o * a.in + k_begin) * weight_bytes,
          .row_bytes = a.in * weight_bytes,
          .lines_per_row = lines_per_row,
          .count = features * lines_per_row};
}

// Every row of [row_begin, row_end) against the panel's first `elements` elements: tiles of
// kTileRows, then what is left; before each tile, its share of the next panel's lines.
template <class Elements, int kVectors>
KVD_AVX512 void PanelRows(const MatmulArgs& a, int64_t row_begin, int64_t row_end, int64_t o,
                          int64_t width, int64_t elements, bool accumulate,
                          const NextPanelLines& next) {
  const int64_t tiles = (row_end - row_begin + kTileRows - 1) / kTileRows;
  const int64_t lines_per_tile = (next.count + tiles - 1) / tiles;
  int64_t r = row_begin, fetched = 0;
  for (; r + kTileRows <= row_end; r += kTileRows, fetched += lines_per_tile) {
    next.Fetch(fetched, fetched + lines_per_tile);
    Elements::template Tile<kTileRows, kVectors>(a, r, o, width, elements, accumulate);
  }
  next.Fetch(fetched, fetched + lines_per_tile);
  switch (row_end - r) {
    case 7:
      return Elements::template Tile<7, kVectors>(a, r, o, width, elements, accumulate);
    case 6:
      return Elements::template Tile<6, kVectors>(a, r, o, width, elements, accumulate);
    case 5:
      return Elements::template Tile<5, kVectors>(a, r, o, width, elements, accumulate);
    case 4:
      return Elements::template Tile<4, kVectors>(a, r, o, width, elements, accumulate);
    case 3:
      return Elements::template Tile<3, kVectors>(a, r, o, width, elements, accumulate);
    case 2:
      return Elements::template Tile<2, kVectors>(a, r, o, width, elements, accumulate);
    case 1:
      return Elements::template Tile<1, kVectors>(a, r, o, width, elements, accumulate);
  }
}

template <class Elements>
KVD_AVX512 void Run(const MatmulArgs& a) {
  constexpr int64_t kPanelInputs = kPanelElements * Elements::kInputsPerElement;
  const int64_t end = a.first + a.count;
  for (int64_t row_begin = 0; row_begin < a.rows; row_begin += kRowsPerBlock) {
    const int64_t row_end = std::min(a.rows, row_begin + kRowsPerBlock);
    const int64_t padded_rows =
        (row_end - row_begin + 2 * kTileRows - 1) / (2 * kTileRows) * 2 * kTileRows;
    if (packed_rows.size() < static_cast<size_t>(padded_rows * kPanelElements)) {
      packed_rows.resize(padded_rows * kPanelElements);
    }
    for (int64_t k_begin = 0; k_begin < a.in; k_begin += kPanelInputs) {
      const int64_t k_end = std::min(a.in, k_begin + kPanelInputs);
      const int64_t elements =
          (k_end - k_begin + Elements::kInputsPerElement - 1) / Elements::kInputsPerElement;
      const bool accumulate = k_begin > 0;
      Elements::PackRows(a, row_begin, row_end, k_begin, k_end);
      for (int64_t o = a.first; o < end; o += kPanelOutputs) {
        const int64_t width = std::min(kPanelOutputs, end - o);
        Elements::PackPanel(a, o, width, k_begin, k_end);
        const NextPanelLines next =
            LinesOfPanel(a, Elements::kWeightBytes, o + kPanelOutputs, end, k_begin, k_end);
        switch ((width + 15) / 16) {
          case 3:
            PanelRows<Elements, 3>(a, row_begin, row_end, o, width, elements, accumulate, next);
            break;
          case 2:
            PanelRows<Elements, 2>(a, row_begin, row_end, o, width, elements, accumulate, next);
            break;
          case 1:
            PanelRows<Elements, 1>(a, row_begin, row_end, o, width, elements, accumulate, next);
            break;
        }
      }
    }
  }
}

}  // namespace

void PackedGemmAvx512(const MatmulArgs& a) {
  switch (a.dtype) {
    case DType::kF32:
      return Run<F32Elements<F32Weights>>(a);
    case DType::kBF16:
      return Run<F32Elements<Bf16Weights>>(a);
    case DType::kF16:
      return Run<F32Elements<F16Weights>>(a);
    case DType::kInt8:
    case DType::kInt4:
      break;
  }
  KVD_CHECK(false);
}

void PackedBf16GemmAvx512(const MatmulArgs& a) {
  KVD_CHECK(a.dtype == DType::kBF16);
  Run<Bf16PairElements>(a);
}

}  // namespace kvd::kernels::cpu
