// The packed GEMM of bf16 weights on AMX tiles (gemm_avx512.h's PackedBf16GemmAmx): the loops of
// gemm_avx512_panels.h, with a tile of 32 rows by a panel's 48 output features whose sums stay
// in six AMX tile registers across the panel's inputs. Rows rounded to bf16 are packed as A tiles (sixteen rows by
// sixteen pairs of inputs, 1 KiB each, one after another along the inputs), a panel's weights as
// B tiles (sixteen pairs by sixteen features, each feature's pair in a 32-bit lane: the
// transpose the AVX512-BF16 GEMM's panels use), and one TDPBF16PS adds a 16 x 16 x 32 block of
// products, 512 times a vdpbf16ps's. Products are exact and summed in f32 as vdpbf16ps's are
// (subnormal inputs and sums flushed to zero), in another order.
#include <algorithm>
#include <cstdint>

#include "base/check.h"
#include "kernels/cpu/amx_tiles.h"
#include "kernels/cpu/avx512_vectors.h"
#include "kernels/cpu/gemm_avx512.h"
#include "kernels/cpu/gemm_avx512_panels.h"

namespace kvd::kernels::cpu {
namespace {

using namespace packed_gemm;  // NOLINT(google-build-using-namespace)

constexpr int kAmxTileRows = amx::kTileRows;
constexpr int kPairsPerTileRow = amx::kSlotsPerTileRow;
// The floats (four-byte slots) of one A or B tile: a TDPBF16PS step's 32 inputs.
constexpr int64_t kTileFloats = amx::kTileSlots;
// Tile registers, named by number in the instructions (GCC's intrinsics spell them out as text):
// tmm0-2 the sums of the first sixteen rows by the panel's three groups of sixteen features,
// tmm3-5 those of the next sixteen rows, tmm6 an A tile of rows, tmm7 a B tile of weights.

// One step of 32 inputs of up to 32 rows (kRowTiles A tiles at `rows`, 16 * kPanelElements floats
// apart) by the panel's first kGroups groups (B tiles at `weights`): seven tile loads for six
// products, the second row tile walking the groups back from the B tile the first left loaded.
template <int kRowTiles, int kGroups>
KVD_AMX_BF16 inline __attribute__((always_inline)) void MultiplyStep(const float* rows,
                                                                     const float* weights) {
  _tile_loadd(6, rows, 64);
  _tile_loadd(7, weights, 64);
  _tile_dpbf16ps(0, 6, 7);
  if constexpr (kGroups > 1) {
    _tile_loadd(7, weights + kTileFloats, 64);
    _tile_dpbf16ps(1, 6, 7);
  }
  if constexpr (kGroups > 2) {
    _tile_loadd(7, weights + 2 * kTileFloats, 64);
    _tile_dpbf16ps(2, 6, 7);
  }
  if constexpr (kRowTiles > 1) {
    _tile_loadd(6, rows + kAmxTileRows * kElementPanelElements, 64);
    if constexpr (kGroups > 2) {
      _tile_dpbf16ps(5, 6, 7);
      _tile_loadd(7, weights + kTileFloats, 64);
    }
    if constexpr (kGroups > 1) {
      _tile_dpbf16ps(4, 6, 7);
      _tile_loadd(7, weights, 64);
    }
    _tile_dpbf16ps(3, 6, 7);
  }
}

template <int kRowTiles, int kGroups>
KVD_AMX_BF16 inline __attribute__((always_inline)) void ZeroSums() {
  _tile_zero(0);
  if constexpr (kGroups > 1) _tile_zero(1);
  if constexpr (kGroups > 2) _tile_zero(2);
  if constexpr (kRowTiles > 1) {
    _tile_zero(3);
    if constexpr (kGroups > 1) _tile_zero(4);
    if constexpr (kGroups > 2) _tile_zero(5);
  }
}

// The sums as sixteen rows of sixteen floats a tile: row tile t's group g at (3t + g) * 256.
template <int kRowTiles, int kGroups>
KVD_AMX_BF16 inline __attribute__((always_inline)) void StoreSums(float* sums) {
  _tile_stored(0, sums, 64);
  if constexpr (kGroups > 1) _tile_stored(1, sums + kTileFloats, 64);
  if constexpr (kGroups > 2) _tile_stored(2, sums + 2 * kTileFloats, 64);
  if constexpr (kRowTiles > 1) {
    _tile_stored(3, sums + 3 * kTileFloats, 64);
    if constexpr (kGroups > 1) _tile_stored(4, sums + 4 * kTileFloats, 64);
    if constexpr (kGroups > 2) _tile_stored(5, sums + 5 * kTileFloats, 64);
  }
}

struct Bf16AmxElements {
  static constexpr int64_t kInputsPerElement = 2;
  static constexpr int64_t kPanelElements = kElementPanelElements;
  static constexpr int64_t kPanelFloats = kElementPanelFloats;
  static constexpr int kTileRows = 2 * kAmxTileRows;
  static constexpr bool kPacksRows = true;
  // Packed rows a panel's tiles walk: 1 MiB (256 rows of 2,048 inputs) stays in L2 beside the
  // panel; 6-9% faster at 512 and 1,024 rows than 4 MiB, and 512 KiB slower (docs/benchmarks.md).
  static constexpr int64_t kRowBlockBytes = int64_t{1} << 20;
  static_assert(kAmxTileRows == 2 * kElementTileRows, "Run pads a block's rows to whole A tiles");

  static NextPanelLines LinesOfPanel(const MatmulArgs& a, int64_t o, int64_t end, int64_t k_begin,
                                     int64_t k_end) {
    return LinesOfElementPanel(a, 2, o, end, k_begin, k_end);
  }

  // Tile t of the block (rows row_begin + 16t on), step s (inputs k_begin + 32s on) at
  // packed_rows[t * 16 * kPanelElements + s * kTileFloats]: row j's sixteen pairs at j * 16.
  // Rows past row_end are zero.
  KVD_AMX_BF16 static void PackRows(const MatmulArgs& a, int64_t row_begin, int64_t row_end,
                                    int64_t k_begin, int64_t k_end) {
    for (int64_t r = row_begin; r < row_end; r += kAmxTileRows) {
      float* tile = &packed_rows[(r - row_begin) * kPanelElements];
      for (int64_t k = k_begin; k < k_end; k += 2 * kPairsPerTileRow) {
        const int64_t left = k_end - k;
        const __mmask16 low = TailMask(left);
        const __mmask16 high = left > 16 ? TailMask(left - 16) : __mmask16{0};
        float* step = tile + (k - k_begin) / 2 / kPairsPerTileRow * kTileFloats;
        for (int j = 0; j < kAmxTileRows; ++j) {
          __m512 pairs = _mm512_setzero_ps();
          if (r + j < row_end) {
            const float* row = a.x + (r + j) * a.in + k;
            const __m512bh rounded = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(high, row + 16),
                                                         _mm512_maskz_loadu_ps(low, row));
            pairs = reinterpret_cast<const __m512&>(rounded);
          }
          _mm512_storeu_ps(step + j * kPairsPerTileRow, pairs);
        }
      }
    }
  }

  // Step s of group g (features o + 16g on) at Panel()[(s * kPanelVectors + g) * kTileFloats]:
  // pair i of every feature at i * 16, feature j's in lane j.
  KVD_AMX_BF16 static void PackPanel(const MatmulArgs& a, int64_t o, int64_t width, int64_t k_begin,
                                     int64_t k_end) {
    float* const panel = Panel();
    for (int64_t g = 0; g * 16 < width; ++g) {
      for (int64_t k = k_begin; k < k_end; k += 2 * kPairsPerTileRow) {
        __m512 v[16];
        LoadBf16Pairs(a, o + g * 16, std::min<int64_t>(16, width - g * 16), k, k_end, v);
        float* to =
            panel + ((k - k_begin) / 2 / kPairsPerTileRow * kPanelVectors + g) * kTileFloats;
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i) _mm512_store_ps(to + i * kPairsPerTileRow, v[i]);
      }
    }
  }

  // Rows [r, r + kRows) against the panel's first kVectors groups; the A tiles' rows past kRows
  // are zero (PackRows) and their sums are not stored.
  template <int kRows, int kVectors>
  KVD_AMX_BF16 static void Tile(const MatmulArgs& a, int64_t r, int64_t o, int64_t width,
                                int64_t k_begin, int64_t k_end) {
    const int64_t steps = (k_end - k_begin + 2 * kPairsPerTileRow - 1) / (2 * kPairsPerTileRow);
    const float* rows = &packed_rows[r % kRowsPerBlock<Bf16AmxElements> * kPanelElements];
    const float* weights = Panel();
    amx::StoresBeforeTileLoads();
    constexpr int kRowTiles = (kRows + kAmxTileRows - 1) / kAmxTileRows;
    ZeroSums<kRowTiles, kVectors>();
    for (int64_t s = 0; s < steps;
         ++s, rows += kTileFloats, weights += kPanelVectors * kTileFloats) {
      MultiplyStep<kRowTiles, kVectors>(rows, weights);
    }
    alignas(64) float sums[2 * kPanelVectors * kTileFloats];
    StoreSums<kRowTiles, kVectors>(sums);
    const bool accumulate = k_begin > 0;
    for (int rr = 0; rr < kRows; ++rr) {
      float* out = a.out + (r + rr) * a.out_stride + o;
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) {
        const __mmask16 mask = v + 1 == kVectors ? TailMask(width - 16 * v) : __mmask16{0xffff};
        const int64_t tile = rr / kAmxTileRows * kPanelVectors + v;
        __m512 sum = _mm512_load_ps(sums + tile * kTileFloats + rr % kAmxTileRows * 16);
        if (accumulate) sum = _mm512_add_ps(sum, _mm512_maskz_loadu_ps(mask, out + 16 * v));
        _mm512_mask_storeu_ps(out + 16 * v, mask, sum);
      }
    }
  }
};

KVD_AMX_BF16 void RunOnTiles(const MatmulArgs& a) {
  amx::ConfigureTiles();
  Run<Bf16AmxElements>(a);
  _tile_release();
}

}  // namespace

void PackedBf16GemmAmx(const MatmulArgs& a) {
  KVD_CHECK(a.dtype == DType::kBF16);
  RunOnTiles(a);
}

}  // namespace kvd::kernels::cpu
