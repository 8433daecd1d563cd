#include "kernels/cpu/gemm_avx512.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/check.h"
#include "kernels/cpu/avx512_vectors.h"
#include "kernels/cpu/gemm_avx512_panels.h"

namespace kvd::kernels::cpu {
namespace {

using namespace packed_gemm;  // NOLINT(google-build-using-namespace)

// Stores the sixteen elements from `at` on of rows [r, r + 16) (`tile_rows` of them real), row
// r + j's in v[j], into packed_rows from `first` (row r's tile): a 16 x 16 transpose leaves the
// sixteen rows' element i in vector i, the first tile's half in its lower 256 bits.
KVD_AVX512 inline __attribute__((always_inline)) void StoreSixteenRows(__m512 (&v)[16],
                                                                       float* first, int64_t at,
                                                                       int64_t tile_rows) {
  Transpose16(v);
  float* second = first + kElementTileRows * kElementPanelElements;
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) {
    _mm256_storeu_ps(first + (at + i) * kElementTileRows, _mm512_castps512_ps256(v[i]));
    if (tile_rows > kElementTileRows) {
      _mm256_storeu_ps(second + (at + i) * kElementTileRows, _mm512_extractf32x8_ps(v[i], 1));
    }
  }
}

// Fills the panel with inputs [k_begin, k_end) of output features [o, o + width) as f32, zero
// past either end, sixteen features at a time: a 16 x 16 transpose of floats, sixteen inputs a
// step.
template <class Weights>
KVD_AVX512 void PackF32Panel(const MatmulArgs& a, int64_t o, int64_t width, int64_t k_begin,
                             int64_t k_end) {
  float* const panel = Panel();
  for (int64_t g = 0; g * 16 < width; ++g) {
    const int64_t features = std::min<int64_t>(16, width - g * 16);
    for (int64_t k = k_begin; k < k_end; k += 16) {
      const __mmask16 mask = TailMask(k_end - k);
      __m512 v[16];
#pragma GCC unroll 16
      for (int j = 0; j < 16; ++j) {
        const int64_t at = (o + g * 16 + j) * a.in + k;
        v[j] = j >= features    ? _mm512_setzero_ps()
               : mask == 0xffff ? Weights::template Load<false>(a.weight, at, mask)
                                : Weights::template Load<true>(a.weight, at, mask);
      }
      Transpose16(v);
      float* to = panel + (k - k_begin) * kPanelOutputs + g * 16;
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) _mm512_store_ps(to + i * kPanelOutputs, v[i]);
    }
  }
}

// bf16 weights widened to f32 thirty-two inputs a step: the transpose moves pairs of
// neighbouring inputs as one 32-bit lane, and each pair then widens to two floats with a shift
// and a mask (a bf16 is an f32's upper half), half the shuffles a weight of the float transpose.
template <>
KVD_AVX512 void PackF32Panel<Bf16Weights>(const MatmulArgs& a, int64_t o, int64_t width,
                                          int64_t k_begin, int64_t k_end) {
  const __m512i upper = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  float* const panel = Panel();
  for (int64_t g = 0; g * 16 < width; ++g) {
    const int64_t features = std::min<int64_t>(16, width - g * 16);
    for (int64_t k = k_begin; k < k_end; k += 32) {
      __m512 v[16];
      LoadBf16Pairs(a, o + g * 16, features, k, k_end, v);
      float* to = panel + (k - k_begin) * kPanelOutputs + g * 16;
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
  static constexpr int64_t kPanelElements = kElementPanelElements;
  static constexpr int64_t kPanelFloats = kElementPanelFloats;
  static constexpr int kTileRows = kElementTileRows;
  static constexpr bool kPacksRows = true;

  static NextPanelLines LinesOfPanel(const MatmulArgs& a, int64_t o, int64_t end, int64_t k_begin,
                                     int64_t k_end) {
    return LinesOfElementPanel(a, Weights::kBytes, o, end, k_begin, k_end);
  }

  KVD_AVX512 static void PackRows(const MatmulArgs& a, int64_t row_begin, int64_t row_end,
                                  int64_t k_begin, int64_t k_end) {
    for (int64_t r = row_begin; r < row_end; r += 2 * kElementTileRows) {
      const int64_t tile_rows = std::min<int64_t>(2 * kElementTileRows, row_end - r);
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
                              int64_t k_begin, int64_t k_end) {
    const int64_t elements = k_end - k_begin;
    __m512 acc[kRows][kVectors];
#pragma GCC unroll 8
    for (int rr = 0; rr < kRows; ++rr) {
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) acc[rr][v] = _mm512_setzero_ps();
    }
    const int64_t row_in_block = r % kRowsPerBlock<F32Elements>;
    const float* x = &packed_rows[row_in_block * kPanelElements];
    const float* w = Panel();
    for (int64_t e = 0; e < elements; ++e, w += kPanelOutputs, x += kElementTileRows) {
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
    StoreTile(acc, a, r, o, width, /*accumulate=*/k_begin > 0);
  }
};

// bf16 weights against rows rounded to bf16 (to nearest, ties to even), for CPUs with
// AVX512-BF16: an element is a pair of neighbouring inputs, and one vdpbf16ps adds both
// products (exact in f32) of sixteen features, twice an FMA's work.
struct Bf16PairElements {
  static constexpr int64_t kInputsPerElement = 2;
  static constexpr int64_t kPanelElements = kElementPanelElements;
  static constexpr int64_t kPanelFloats = kElementPanelFloats;
  static constexpr int kTileRows = kElementTileRows;
  static constexpr bool kPacksRows = true;

  static NextPanelLines LinesOfPanel(const MatmulArgs& a, int64_t o, int64_t end, int64_t k_begin,
                                     int64_t k_end) {
    return LinesOfElementPanel(a, 2, o, end, k_begin, k_end);
  }

  KVD_AVX512_BF16 static void PackRows(const MatmulArgs& a, int64_t row_begin, int64_t row_end,
                                       int64_t k_begin, int64_t k_end) {
    for (int64_t r = row_begin; r < row_end; r += 2 * kElementTileRows) {
      const int64_t tile_rows = std::min<int64_t>(2 * kElementTileRows, row_end - r);
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
    float* const panel = Panel();
    for (int64_t g = 0; g * 16 < width; ++g) {
      for (int64_t k = k_begin; k < k_end; k += 32) {
        __m512 v[16];
        LoadBf16Pairs(a, o + g * 16, std::min<int64_t>(16, width - g * 16), k, k_end, v);
        float* to = panel + (k - k_begin) / 2 * kPanelOutputs + g * 16;
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i) _mm512_store_ps(to + i * kPanelOutputs, v[i]);
      }
    }
  }

  template <int kRows, int kVectors>
  KVD_AVX512_BF16 static void Tile(const MatmulArgs& a, int64_t r, int64_t o, int64_t width,
                                   int64_t k_begin, int64_t k_end) {
    const int64_t elements = (k_end - k_begin + 1) / 2;
    __m512 acc[kRows][kVectors];
#pragma GCC unroll 8
    for (int rr = 0; rr < kRows; ++rr) {
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) acc[rr][v] = _mm512_setzero_ps();
    }
    const int64_t row_in_block = r % kRowsPerBlock<Bf16PairElements>;
    const float* x = &packed_rows[row_in_block * kPanelElements];
    const float* w = Panel();
    for (int64_t e = 0; e < elements; ++e, w += kPanelOutputs, x += kElementTileRows) {
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
    StoreTile(acc, a, r, o, width, /*accumulate=*/k_begin > 0);
  }
};

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
      return PackedBlockGemmAvx512(a);
  }
}

void PackedBf16GemmAvx512(const MatmulArgs& a) {
  KVD_CHECK(a.dtype == DType::kBF16);
  Run<Bf16PairElements>(a);
}

}  // namespace kvd::kernels::cpu
