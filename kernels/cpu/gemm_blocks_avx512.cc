// The packed GEMM for int8 and int4 weights (gemm_avx512.h): their panels and tiles.
#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "kernels/cpu/avx512_vectors.h"
#include "kernels/cpu/gemm_avx512_panels.h"
#include "kernels/cpu/quantize.h"

namespace kvd::kernels::cpu {
namespace {

using namespace packed_gemm;  // NOLINT(google-build-using-namespace)

// int8 and int4 weights against int8 activations (quantize.h). An element is four inputs, so a
// panel covers 128 blocks: each group of four inputs of sixteen output features is one
// vector of unsigned bytes (int8 offset by 128, int4's nibbles as they are), and one vpdpbusd
// against a row's four activations, broadcast, adds 64 products into sixteen integer sums. A
// block's sums, eight vpdpbusd, are scaled into the f32 outputs once: weight scale × activation
// scale, and for int4 its offset times the activations' scaled sum. int8's offset is taken
// back exactly: each sum starts from -128 times the block's activation sum.
// Panels of as many elements as the element formats' (kElementPanelElements), and for the same
// reason: 4,096 inputs, so that a tile's sums cover a projection's every input.
constexpr int64_t kBlockPanelElements = kElementPanelElements;
constexpr int64_t kPanelBlocks = kBlockPanelElements * 4 / kQuantBlock;
// After the panel's weights, its scales and then int4's offsets as f32: [block][feature],
// kPanelOutputs a block.
inline float* PanelScales() { return Panel() + kBlockPanelElements * kPanelOutputs; }
inline float* PanelOffsets() { return PanelScales() + kPanelBlocks * kPanelOutputs; }

struct Int8Bytes {
  static constexpr bool kHasOffset = false;
  static constexpr int64_t kBlockBytes = kQuantBlock;
  // Blocks [b, b + blocks) of `row` (blocks <= 2) as unsigned bytes in input order.
  KVD_AVX512 static __m512i TwoBlocks(const ConstQuantizedRow& row, int64_t b, int64_t blocks) {
    const unsigned char* from = row.q + b * kQuantBlock;
    const __m512i w =
        blocks == 2 ? _mm512_loadu_si512(from) : _mm512_maskz_loadu_epi8((1ull << 32) - 1, from);
    return _mm512_xor_si512(w, _mm512_set1_epi8(static_cast<char>(0x80)));
  }
};

struct Int4Bytes {
  static constexpr bool kHasOffset = true;
  static constexpr int64_t kBlockBytes = kQuantBlock / 2;
  // A block's byte j holds weight j (low nibble) and j + 16 (high): each block's sixteen low
  // nibbles, then its sixteen high ones.
  KVD_AVX512 static __m512i TwoBlocks(const ConstQuantizedRow& row, int64_t b, int64_t blocks) {
    const unsigned char* from = row.q + b * kBlockBytes;
    const __m256i packed = blocks == 2 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from))
                                       : _mm256_maskz_loadu_epi8(0xffffu, from);
    const __m256i nibble = _mm256_set1_epi8(15);
    const __m256i low = _mm256_and_si256(packed, nibble);
    const __m256i high = _mm256_and_si256(_mm256_srli_epi16(packed, 4), nibble);
    const __m512i halves = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
    return _mm512_shuffle_i64x2(halves, halves, _MM_SHUFFLE(3, 1, 2, 0));
  }
};

// The f16 values (scales or offsets) of the sixteen blocks at `p` that `mask` selects, zero past
// them.
KVD_AVX512 inline __m256i LoadBlockValues(__mmask16 mask, const uint16_t* p) {
  return mask == 0xffff ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))
                        : _mm256_maskz_loadu_epi16(mask, p);
}

template <class Format>
struct BlockElements {
  static constexpr int64_t kInputsPerElement = 4;
  static constexpr int64_t kPanelElements = kBlockPanelElements;
  static constexpr int64_t kPanelFloats = (kPanelElements + 2 * kPanelBlocks) * kPanelOutputs;
  // Twelve integer and twelve f32 sums, three weight vectors and a broadcast.
  static constexpr int kTileRows = 4;
  static constexpr bool kPacksRows = false;

  static void PackRows(const MatmulArgs&, int64_t, int64_t, int64_t, int64_t) {}

  static NextPanelLines LinesOfPanel(const MatmulArgs& a, int64_t o, int64_t end, int64_t k_begin,
                                     int64_t k_end) {
    if (o >= end) return {};
    const int64_t row_bytes = static_cast<int64_t>(RowBytes(a.dtype, a.in));
    const ConstQuantizedRow first_row = ViewQuantizedRow(
        a.dtype, static_cast<const unsigned char*>(a.weight) + o * row_bytes, a.in);
    const int64_t lines_per_row = ((k_end - k_begin) / kQuantBlock * Format::kBlockBytes + 63) / 64;
    return {.first = reinterpret_cast<const char*>(first_row.q) +
                     k_begin / kQuantBlock * Format::kBlockBytes,
            .row_bytes = row_bytes,
            .lines_per_row = lines_per_row,
            .count = std::min(kPanelOutputs, end - o) * lines_per_row};
  }

  // Sixteen features at a time: two blocks of each as 64 bytes, transposed as 16 x 16 dwords so
  // that vector i holds every feature's group i; the features' block scales likewise, sixteen
  // blocks at a time.
  KVD_AVX512 static void PackPanel(const MatmulArgs& a, int64_t o, int64_t width, int64_t k_begin,
                                   int64_t k_end) {
    const size_t row_bytes = RowBytes(a.dtype, a.in);
    const int64_t first_block = k_begin / kQuantBlock;
    const int64_t blocks = (k_end - k_begin) / kQuantBlock;
    auto* groups = reinterpret_cast<int32_t*>(Panel());
    float* const panel_scales = PanelScales();
    float* const panel_offsets = PanelOffsets();
    for (int64_t g = 0; g * 16 < width; ++g) {
      const int64_t features = std::min<int64_t>(16, width - g * 16);
      ConstQuantizedRow rows[16];
      for (int j = 0; j < features; ++j) {
        rows[j] = ViewQuantizedRow(
            a.dtype, static_cast<const unsigned char*>(a.weight) + (o + g * 16 + j) * row_bytes,
            a.in);
      }
      for (int64_t b = 0; b < blocks; b += 2) {
        const int64_t pair = std::min<int64_t>(2, blocks - b);
        __m512 v[16];
#pragma GCC unroll 16
        for (int j = 0; j < 16; ++j) {
          v[j] = j < features
                     ? _mm512_castsi512_ps(Format::TwoBlocks(rows[j], first_block + b, pair))
                     : _mm512_setzero_ps();
        }
        Transpose16(v);
        for (int i = 0; i < 8 * pair; ++i) {
          _mm512_store_si512(groups + (b * 8 + i) * kPanelOutputs + g * 16,
                             _mm512_castps_si512(v[i]));
        }
      }
      for (int64_t c = 0; c < blocks; c += 16) {
        const __mmask16 mask = TailMask(blocks - c);
        __m512 scales[16], offsets[16];
#pragma GCC unroll 16
        for (int j = 0; j < 16; ++j) {
          scales[j] = offsets[j] = _mm512_setzero_ps();
          if (j >= features) continue;
          scales[j] = _mm512_cvtph_ps(LoadBlockValues(mask, rows[j].scales + first_block + c));
          if constexpr (Format::kHasOffset) {
            offsets[j] = _mm512_cvtph_ps(LoadBlockValues(mask, rows[j].offsets + first_block + c));
          }
        }
        Transpose16(scales);
        if constexpr (Format::kHasOffset) Transpose16(offsets);
        for (int64_t b = c; b < std::min(blocks, c + 16); ++b) {
          _mm512_store_ps(panel_scales + b * kPanelOutputs + g * 16, scales[b - c]);
          if constexpr (Format::kHasOffset) {
            _mm512_store_ps(panel_offsets + b * kPanelOutputs + g * 16, offsets[b - c]);
          }
        }
      }
    }
  }

  template <int kRows, int kVectors>
  KVD_AVX512 static void Tile(const MatmulArgs& a, int64_t r, int64_t o, int64_t width,
                              int64_t k_begin, int64_t k_end) {
    const QuantizedActivations& act = *a.activations;
    const int64_t blocks_per_row = act.blocks_per_row();
    const int64_t first_block = k_begin / kQuantBlock;
    const int64_t blocks = (k_end - k_begin) / kQuantBlock;
    __m512 acc[kRows][kVectors];
#pragma GCC unroll 8
    for (int rr = 0; rr < kRows; ++rr) {
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) acc[rr][v] = _mm512_setzero_ps();
    }
    const auto* groups = reinterpret_cast<const int32_t*>(Panel());
    const float* panel_scales = PanelScales();
    const float* panel_offsets = PanelOffsets();
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t block = first_block + b;
      __m512i dots[kRows][kVectors];
#pragma GCC unroll 8
      for (int rr = 0; rr < kRows; ++rr) {
        const __m512i start =
            Format::kHasOffset
                ? _mm512_setzero_si512()
                : _mm512_set1_epi32(-128 * act.q_sums[(r + rr) * blocks_per_row + block]);
#pragma GCC unroll 4
        for (int v = 0; v < kVectors; ++v) dots[rr][v] = start;
      }
#pragma GCC unroll 8
      for (int group = 0; group < 8; ++group) {
        __m512i weights[kVectors];
#pragma GCC unroll 4
        for (int v = 0; v < kVectors; ++v) {
          weights[v] = _mm512_load_si512(groups + (b * 8 + group) * kPanelOutputs + 16 * v);
        }
#pragma GCC unroll 8
        for (int rr = 0; rr < kRows; ++rr) {
          int32_t four;
          std::memcpy(&four, &act.q[(r + rr) * act.in + block * kQuantBlock + 4 * group],
                      sizeof(four));
          const __m512i x = _mm512_set1_epi32(four);
#pragma GCC unroll 4
          for (int v = 0; v < kVectors; ++v) {
            dots[rr][v] = _mm512_dpbusd_epi32(dots[rr][v], weights[v], x);
          }
        }
      }
#pragma GCC unroll 8
      for (int rr = 0; rr < kRows; ++rr) {
        const int64_t at = (r + rr) * blocks_per_row + block;
        const __m512 x_scale = _mm512_set1_ps(act.scales[at]);
#pragma GCC unroll 4
        for (int v = 0; v < kVectors; ++v) {
          const __m512 scale =
              _mm512_mul_ps(_mm512_load_ps(panel_scales + b * kPanelOutputs + 16 * v), x_scale);
          acc[rr][v] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dots[rr][v]), scale, acc[rr][v]);
          if constexpr (Format::kHasOffset) {
            acc[rr][v] = _mm512_fmadd_ps(_mm512_load_ps(panel_offsets + b * kPanelOutputs + 16 * v),
                                         _mm512_set1_ps(act.sums[at]), acc[rr][v]);
          }
        }
      }
    }
    StoreTile(acc, a, r, o, width, /*accumulate=*/k_begin > 0);
  }
};

}  // namespace

void PackedBlockGemmAvx512(const MatmulArgs& a) {
  if (a.dtype == DType::kInt8) return Run<BlockElements<Int8Bytes>>(a);
  KVD_CHECK(a.dtype == DType::kInt4);
  Run<BlockElements<Int4Bytes>>(a);
}

}  // namespace kvd::kernels::cpu
