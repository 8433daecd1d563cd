#include "kernels/cpu/gemm_avx512.h"

#include <algorithm>
#include <vector>

#include "base/check.h"
#include "kernels/cpu/avx512_vectors.h"

namespace kvd::kernels::cpu {
namespace {

// A panel: kPanelInputs inputs of kPanelOutputs output features, input-major, 24 KiB of f32 in
// L1 (half of this CPU kind's 48 KiB, so that the rows' lines fit beside it).
constexpr int kPanelVectors = 3;
constexpr int64_t kPanelOutputs = 16 * kPanelVectors;
static_assert(kPanelOutputs == kGemmPanelOutputs);
constexpr int64_t kPanelInputs = 128;
// Rows a tile reads the panel for: 24 accumulators, with three weight vectors and a broadcast
// that is 28 of the 32 registers.
constexpr int kTileRows = 8;
// Rows whose inputs for one panel (kPanelInputs each) stay in L2 while every panel of the slice
// passes over them: 1 MiB.
constexpr int64_t kRowsPerBlock = (int64_t{1} << 20) / (kPanelInputs * 4);

// panel[i * kPanelOutputs + j]: input k_begin + i of output feature o + j.
alignas(64) thread_local float panel[kPanelInputs * kPanelOutputs];
// The rows of a block, inputs [k_begin, k_end), tile by tile: input k_begin + i of row r + rr
// of the tile from r on at packed_rows[(r - row_begin) * kPanelInputs + i * kTileRows + rr]. Grown
// on a thread's first product, so that threads that never multiply hold none.
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

// Fills packed_rows with inputs [k_begin, k_end) of rows [row_begin, row_end), two tiles at a time:
// a 16 x 16 transpose leaves sixteen rows' input i in vector i, the first tile's half in its
// lower 256 bits.
KVD_AVX512 void PackRows(const MatmulArgs& a, int64_t row_begin, int64_t row_end, int64_t k_begin,
                         int64_t k_end) {
  for (int64_t r = row_begin; r < row_end; r += 2 * kTileRows) {
    const int64_t tile_rows = std::min<int64_t>(2 * kTileRows, row_end - r);
    float* first = &packed_rows[(r - row_begin) * kPanelInputs];
    float* second = first + kTileRows * kPanelInputs;
    for (int64_t k = k_begin; k < k_end; k += 16) {
      const __mmask16 mask = TailMask(k_end - k);
      __m512 v[16];
#pragma GCC unroll 16
      for (int j = 0; j < 16; ++j) {
        v[j] = j < tile_rows ? _mm512_maskz_loadu_ps(mask, a.x + (r + j) * a.in + k)
                             : _mm512_setzero_ps();
      }
      Transpose16(v);
      const int64_t at = (k - k_begin) * kTileRows;
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) {
        _mm256_storeu_ps(first + at + i * kTileRows, _mm512_castps512_ps256(v[i]));
        if (tile_rows > kTileRows) {
          _mm256_storeu_ps(second + at + i * kTileRows, _mm512_extractf32x8_ps(v[i], 1));
        }
      }
    }
  }
}

// Fills the panel with inputs [k_begin, k_end) of output features [o, o + width), zero past
// either end, sixteen features at a time: a 16 x 16 transpose of floats, sixteen inputs a step.
template <class Weights>
KVD_AVX512 void Pack(const MatmulArgs& a, int64_t o, int64_t width, int64_t k_begin,
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

// bf16 weights thirty-two inputs a step: the transpose moves pairs of neighbouring inputs as
// one 32-bit lane, and each pair then widens to two floats with a shift and a mask (a bf16 is
// an f32's upper half), half the shuffles a weight of the float transpose.
template <>
KVD_AVX512 void Pack<Bf16Weights>(const MatmulArgs& a, int64_t o, int64_t width, int64_t k_begin,
                                  int64_t k_end) {
  const auto* weight = static_cast<const uint16_t*>(a.weight);
  const __m512i upper = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  for (int64_t g = 0; g * 16 < width; ++g) {
    const int64_t features = std::min<int64_t>(16, width - g * 16);
    for (int64_t k = k_begin; k < k_end; k += 32) {
      const int64_t left = k_end - k;
      const __mmask32 mask = left >= 32 ? ~__mmask32{0} : (__mmask32{1} << left) - 1;
      __m512 v[16];
#pragma GCC unroll 16
      for (int j = 0; j < 16; ++j) {
        v[j] = j < features ? _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(
                                  mask, weight + (o + g * 16 + j) * a.in + k))
                            : _mm512_setzero_ps();
      }
      Transpose16(v);
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

// Adds inputs [k_begin, k_end) of rows [r, r + kRows) times the panel to output features
// [o, o + width) (kVectors sixteens, the last one under a mask), or stores them on the first
// panel of inputs.
template <int kRows, int kVectors>
KVD_AVX512 void Tile(const MatmulArgs& a, int64_t r, int64_t o, int64_t width, int64_t k_begin,
                     int64_t k_end) {
  __m512 acc[kRows][kVectors];
#pragma GCC unroll 8
  for (int rr = 0; rr < kRows; ++rr) {
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) acc[rr][v] = _mm512_setzero_ps();
  }
  const float* x = &packed_rows[(r % kRowsPerBlock) * kPanelInputs];
  const float* w = panel;
  for (int64_t k = k_begin; k < k_end; ++k, w += kPanelOutputs, x += kTileRows) {
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
  const bool accumulate = k_begin > 0;
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

template <class Weights>
NextPanelLines LinesOfPanel(const MatmulArgs& a, int64_t o, int64_t end, int64_t k_begin,
                            int64_t k_end) {
  if (o >= end) return {};
  const int64_t features = std::min(kPanelOutputs, end - o);
  const int64_t lines_per_row = ((k_end - k_begin) * Weights::kBytes + 63) / 64;
  return {.first = static_cast<const char*>(a.weight) + (o * a.in + k_begin) * Weights::kBytes,
          .row_bytes = a.in * Weights::kBytes,
          .lines_per_row = lines_per_row,
          .count = features * lines_per_row};
}

// Every row of [row_begin, row_end) against the panel: tiles of kTileRows, then what is left;
// before each tile, its share of the next panel's lines.
template <int kVectors>
KVD_AVX512 void PanelRows(const MatmulArgs& a, int64_t row_begin, int64_t row_end, int64_t o,
                          int64_t width, int64_t k_begin, int64_t k_end,
                          const NextPanelLines& next) {
  const int64_t tiles = (row_end - row_begin + kTileRows - 1) / kTileRows;
  const int64_t lines_per_tile = (next.count + tiles - 1) / tiles;
  int64_t r = row_begin, fetched = 0;
  for (; r + kTileRows <= row_end; r += kTileRows, fetched += lines_per_tile) {
    next.Fetch(fetched, fetched + lines_per_tile);
    Tile<kTileRows, kVectors>(a, r, o, width, k_begin, k_end);
  }
  next.Fetch(fetched, fetched + lines_per_tile);
  switch (row_end - r) {
    case 7:
      return Tile<7, kVectors>(a, r, o, width, k_begin, k_end);
    case 6:
      return Tile<6, kVectors>(a, r, o, width, k_begin, k_end);
    case 5:
      return Tile<5, kVectors>(a, r, o, width, k_begin, k_end);
    case 4:
      return Tile<4, kVectors>(a, r, o, width, k_begin, k_end);
    case 3:
      return Tile<3, kVectors>(a, r, o, width, k_begin, k_end);
    case 2:
      return Tile<2, kVectors>(a, r, o, width, k_begin, k_end);
    case 1:
      return Tile<1, kVectors>(a, r, o, width, k_begin, k_end);
  }
}

template <class Weights>
KVD_AVX512 void Run(const MatmulArgs& a) {
  const int64_t end = a.first + a.count;
  for (int64_t row_begin = 0; row_begin < a.rows; row_begin += kRowsPerBlock) {
    const int64_t row_end = std::min(a.rows, row_begin + kRowsPerBlock);
    const int64_t padded_rows =
        (row_end - row_begin + 2 * kTileRows - 1) / (2 * kTileRows) * 2 * kTileRows;
    if (packed_rows.size() < static_cast<size_t>(padded_rows * kPanelInputs)) {
      packed_rows.resize(padded_rows * kPanelInputs);
    }
    for (int64_t k_begin = 0; k_begin < a.in; k_begin += kPanelInputs) {
      const int64_t k_end = std::min(a.in, k_begin + kPanelInputs);
      PackRows(a, row_begin, row_end, k_begin, k_end);
      for (int64_t o = a.first; o < end; o += kPanelOutputs) {
        const int64_t width = std::min(kPanelOutputs, end - o);
        Pack<Weights>(a, o, width, k_begin, k_end);
        const NextPanelLines next =
            LinesOfPanel<Weights>(a, o + kPanelOutputs, end, k_begin, k_end);
        switch ((width + 15) / 16) {
          case 3:
            PanelRows<3>(a, row_begin, row_end, o, width, k_begin, k_end, next);
            break;
          case 2:
            PanelRows<2>(a, row_begin, row_end, o, width, k_begin, k_end, next);
            break;
          case 1:
            PanelRows<1>(a, row_begin, row_end, o, width, k_begin, k_end, next);
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
      return Run<F32Weights>(a);
    case DType::kBF16:
      return Run<Bf16Weights>(a);
    case DType::kF16:
      return Run<F16Weights>(a);
    case DType::kInt8:
    case DType::kInt4:
      break;
  }
  KVD_CHECK(false);
}

}  // namespace kvd::kernels::cpu
