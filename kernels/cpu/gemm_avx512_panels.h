// The packed GEMM's machinery that every format shares (gemm_avx512.h): the panel and the
// packed rows a thread holds, the transpose that fills them, tile stores, the next panel's
// prefetch, and the loops over blocks of rows, panels of inputs and of output features. A format
// is an Elements policy: its element (four bytes of a panel, one or more inputs), how it packs
// rows and panels, and its tile of rows. Packing loads whole vectors of weights with plain loads
// and masks only their tails: on the AMD machine of docs/benchmarks.md, packing ran 1.1-1.2x
// slower on masked loads that selected every byte. Include only from AVX-512 files
// (avx512_vectors.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cpu/avx512_vectors.h"
#include "kernels/cpu/gemm_avx512.h"

namespace kvd::kernels::cpu::packed_gemm {

// A panel: Elements::kPanelElements elements of kPanelOutputs output features, element-major.
// An element is four bytes: one input as an f32, two neighbouring inputs as a pair of bf16, or
// four int8 or int4 weights as unsigned bytes.
inline constexpr int kPanelVectors = 3;
inline constexpr int64_t kPanelOutputs = 16 * kPanelVectors;
static_assert(kPanelOutputs == kGemmPanelOutputs);
// Elements a panel of the element formats holds (192 KiB, in L2): 1,024 f32 inputs or 2,048 as
// bf16 pairs (and 4,096 int8 or int4 inputs). A tile adds its sums into its outputs once a panel
// of inputs: its eight rows' outputs lie a whole output row apart, and with panels of 128
// elements (in L1) reading and writing them back took a quarter of the tiles' time at 512 rows
// on the AMD machine of docs/benchmarks.md. bf16 pairs and int8/int4 now cover a projection of
// 2,048 inputs in one panel, f32 in two. Tiles read a panel from L2 about as fast as from L1
// there.
inline constexpr int64_t kElementPanelElements = 1024;
inline constexpr int64_t kElementPanelFloats = kElementPanelElements * kPanelOutputs;
// Rows an element tile reads the panel for: 24 accumulators, with three weight vectors and a
// broadcast that is 28 of the 32 registers. packed_rows holds them two tiles at a time.
inline constexpr int kElementTileRows = 8;
// Rows whose elements for one panel (the element formats' packed rows, the block formats'
// activations) stay in the last-level cache while every panel of the slice passes over them:
// 4 MiB, 5-8% faster at 512 rows than 1 MiB on the AMD machine of docs/benchmarks.md; an
// Elements policy whose tiles want them closer names its own kRowBlockBytes.
template <class Elements>
constexpr int64_t RowBlockBytes() {
  if constexpr (requires { Elements::kRowBlockBytes; }) {
    return Elements::kRowBlockBytes;
  } else {
    return int64_t{4} << 20;
  }
}
template <class Elements>
inline constexpr int64_t kRowsPerBlock = RowBlockBytes<Elements>() / (Elements::kPanelElements * 4);

// The panel (and what else an Elements policy packs with it: Elements::kPanelFloats in all),
// grown on a thread's first product (threads that never multiply hold none), from its first
// 64-byte-aligned float: element e of output feature o + j at Panel()[e * kPanelOutputs + j].
inline thread_local std::vector<float> panel_floats;
// What panel_floats holds beyond Elements::kPanelFloats, so that Panel() starts on a cache line.
inline constexpr int64_t kPanelAlignmentFloats = 64 / sizeof(float);
inline float* Panel() {
  const auto at = reinterpret_cast<uintptr_t>(panel_floats.data());
  return reinterpret_cast<float*>((at + 63) / 64 * 64);
}
// The rows of a block, a panel's elements, tile by tile: element e of row r + rr of the tile
// from r on at packed_rows[(r - row_begin) * Elements::kPanelElements + e * kElementTileRows + rr].
// Grown on a thread's first product, so that threads that never multiply hold none.
inline thread_local std::vector<float> packed_rows;

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
    const uint16_t* from = weight + (o + j) * a.in + k;
    v[j] = j >= features ? _mm512_setzero_ps()
           : left >= 32  ? _mm512_castsi512_ps(_mm512_loadu_si512(from))
                         : _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(mask, from));
  }
  Transpose16(v);
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

// The cache lines of the weights the next panel packs, fetched a share at a time while the
// current panel's row tiles run, so that packing finds them in cache rather than in memory.
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

// For weights of `weight_bytes` bytes an element, [out_features, in].
inline NextPanelLines LinesOfElementPanel(const MatmulArgs& a, int64_t weight_bytes, int64_t o,
                                          int64_t end, int64_t k_begin, int64_t k_end) {
  if (o >= end) return {};
  const int64_t features = std::min(kPanelOutputs, end - o);
  const int64_t lines_per_row = ((k_end - k_begin) * weight_bytes + 63) / 64;
  return {.first = static_cast<const char*>(a.weight) + (o * a.in + k_begin) * weight_bytes,
          .row_bytes = a.in * weight_bytes,
          .lines_per_row = lines_per_row,
          .count = features * lines_per_row};
}

// The last rows of a panel, fewer than a whole tile: the tile of `rows` rows, `rows` < kRows.
template <class Elements, int kVectors, int kRows>
KVD_AVX512 void LastRows(const MatmulArgs& a, int64_t rows, int64_t r, int64_t o, int64_t width,
                         int64_t k_begin, int64_t k_end) {
  if constexpr (kRows > 1) {
    if (rows == kRows - 1) {
      return Elements::template Tile<kRows - 1, kVectors>(a, r, o, width, k_begin, k_end);
    }
    LastRows<Elements, kVectors, kRows - 1>(a, rows, r, o, width, k_begin, k_end);
  }
}

// Every row of [row_begin, row_end) against the panel: tiles of Elements::kTileRows, then what
// is left; before each tile, its share of the next panel's lines.
template <class Elements, int kVectors>
KVD_AVX512 void PanelRows(const MatmulArgs& a, int64_t row_begin, int64_t row_end, int64_t o,
                          int64_t width, int64_t k_begin, int64_t k_end,
                          const NextPanelLines& next) {
  constexpr int kRows = Elements::kTileRows;
  const int64_t tiles = (row_end - row_begin + kRows - 1) / kRows;
  const int64_t lines_per_tile = (next.count + tiles - 1) / tiles;
  int64_t r = row_begin, fetched = 0;
  for (; r + kRows <= row_end; r += kRows, fetched += lines_per_tile) {
    next.Fetch(fetched, fetched + lines_per_tile);
    Elements::template Tile<kRows, kVectors>(a, r, o, width, k_begin, k_end);
  }
  next.Fetch(fetched, fetched + lines_per_tile);
  LastRows<Elements, kVectors, kRows>(a, row_end - r, r, o, width, k_begin, k_end);
}

template <class Elements>
KVD_AVX512 void Run(const MatmulArgs& a) {
  constexpr int64_t kPanelElements = Elements::kPanelElements;
  constexpr int64_t kPanelInputs = kPanelElements * Elements::kInputsPerElement;
  constexpr int64_t kBlockRows = kRowsPerBlock<Elements>;
  if (panel_floats.size() < static_cast<size_t>(Elements::kPanelFloats + kPanelAlignmentFloats)) {
    panel_floats.resize(Elements::kPanelFloats + kPanelAlignmentFloats);
  }
  const int64_t end = a.first + a.count;
  for (int64_t row_begin = 0; row_begin < a.rows; row_begin += kBlockRows) {
    const int64_t row_end = std::min(a.rows, row_begin + kBlockRows);
    if constexpr (Elements::kPacksRows) {
      const int64_t padded_rows = (row_end - row_begin + 2 * kElementTileRows - 1) /
                                  (2 * kElementTileRows) * 2 * kElementTileRows;
      if (packed_rows.size() < static_cast<size_t>(padded_rows * kPanelElements)) {
        packed_rows.resize(padded_rows * kPanelElements);
      }
    }
    for (int64_t k_begin = 0; k_begin < a.in; k_begin += kPanelInputs) {
      const int64_t k_end = std::min(a.in, k_begin + kPanelInputs);
      Elements::PackRows(a, row_begin, row_end, k_begin, k_end);
      for (int64_t o = a.first; o < end; o += kPanelOutputs) {
        const int64_t width = std::min(kPanelOutputs, end - o);
        Elements::PackPanel(a, o, width, k_begin, k_end);
        const NextPanelLines next =
            Elements::LinesOfPanel(a, o + kPanelOutputs, end, k_begin, k_end);
        switch ((width + 15) / 16) {
          case 3:
            PanelRows<Elements, 3>(a, row_begin, row_end, o, width, k_begin, k_end, next);
            break;
          case 2:
            PanelRows<Elements, 2>(a, row_begin, row_end, o, width, k_begin, k_end, next);
            break;
          case 1:
            PanelRows<Elements, 1>(a, row_begin, row_end, o, width, k_begin, k_end, next);
            break;
        }
      }
    }
  }
}

}  // namespace kvd::kernels::cpu::packed_gemm
