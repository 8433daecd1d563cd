// The AVX-512 variants of the Linear products (matmul.h), for CPUs with AVX-512 F, BW, DQ and VL
// and VNNI, and one for those that also have AVX512-BF16, which multiplies bf16 weights by rows
// rounded to bf16 from kMinRowsToRoundBf16 rows on (its packed GEMM, and below that pairs of
// inputs in the tiles). Products of many rows, every format: the packed GEMM (gemm_avx512.h).
// On fewer rows, element types: tiles of up to four rows by six output features, sixteen inputs
// a step (thirty-two as bf16 pairs), tails under a mask, weights in L1 across a tile's rows and
// inputs in L2 across the tiles (rows and inputs are cut into passes that fit). Block formats:
// int8 two blocks a step, their bytes interleaved four at a time so that one vpdpbusd (the
// weights offset to unsigned) gives both blocks' sums side by side; int4 four blocks a step, one
// 128-bit lane each, so that the nibbles need no reordering, only the activations; each block's
// sums are scaled by its block's scales.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/avx512_vectors.h"
#include "kernels/cpu/gemm_avx512.h"
#include "kernels/cpu/matmul.h"

namespace kvd::kernels::cpu {
namespace {

// Rows whose inputs stay in L2 while every output tile of the slice passes over them, and the
// inputs of an element-type weight a pass covers, so that a tile's weights stay in L1.
constexpr int64_t kInputBytesInL2 = int64_t{1} << 20;
constexpr int64_t kTileWeightBytesInL1 = 24 << 10;
// The fewest rows whose product runs on the packed GEMM (gemm_avx512.h), below which packing the
// panels costs more than the tiles lose (docs/benchmarks.md): for element types; for quantized
// weights, whose tiles scale the sums of every vpdpbusd where the GEMM scales a block's eight at
// once; and for bf16 weights against the AVX512-BF16 variant's tiles of pairs.
constexpr int64_t kMinRowsToPack = 32;
constexpr int64_t kMinRowsToPackBlocks = 16;
constexpr int64_t kMinRowsToPackBf16Pairs = 128;
// From this many rows on, the AVX512-BF16 variant multiplies bf16 weights by rows rounded to bf16:
// fewer rows are bound by memory, not by the products.
constexpr int64_t kMinRowsToRoundBf16 = 8;
// From this many rows on, the AMX variant multiplies bf16 weights on AMX tiles of sixteen rows
// (fewer rows pad a tile): at 8 rows it streams the weights faster than the tiles of pairs, at 4
// slower (docs/benchmarks.md). AMX multiplies bf16 rows, so it starts where rows are rounded.
constexpr int64_t kMinRowsForAmx = 8;
static_assert(kMinRowsForAmx >= kMinRowsToRoundBf16);

// The rows of a product a pass covers and whether this pass adds to what earlier passes (over
// earlier inputs) wrote.
struct Pass {
  int64_t row_end = 0;
  int64_t in_begin = 0;
  int64_t in_end = 0;
  bool accumulate = false;
};

// A tile's sums, zero before its first step.
template <int kRows, int kOuts>
KVD_AVX512 inline __attribute__((always_inline)) void ZeroSums(__m512 (&acc)[kRows][kOuts]) {
#pragma GCC unroll 8
  for (int rr = 0; rr < kRows; ++rr) {
#pragma GCC unroll 8
    for (int k = 0; k < kOuts; ++k) acc[rr][k] = _mm512_setzero_ps();
  }
}

// Stores a tile's sums into output features [o, o + kOuts) of rows [r, r + kRows), or adds them to
// what earlier passes over other inputs left there.
template <int kRows, int kOuts>
KVD_AVX512 inline __attribute__((always_inline)) void StoreSums(const __m512 (&acc)[kRows][kOuts],
                                                                const MatmulArgs& a,
                                                                const Pass& pass, int64_t r,
                                                                int64_t o) {
  float sums[kRows][kOuts];
  HorizontalSums(acc, sums);
  for (int rr = 0; rr < kRows; ++rr) {
    for (int k = 0; k < kOuts; ++k) {
      float& out = a.out[(r + rr) * a.out_stride + o + k];
      out = pass.accumulate ? out + sums[rr][k] : sums[rr][k];
    }
  }
}

// Element-type tiles, for products of fewer than kMinRowsToPack rows (gemm_avx512.h runs the
// others; bf16 weights on AVX512-BF16 take Bf16PairTiles from kMinRowsToRoundBf16): Run adds the
// inputs of `pass` to output features [o, o + kOuts) of rows [r, r + kRows).
template <class Weights>
struct ElementTiles {
  static constexpr int kWideOuts = 6;
  static constexpr int64_t kInputsPerPass =
      kTileWeightBytesInL1 / (kWideOuts * Weights::kBytes) / 16 * 16;

  static int64_t InputsPerPass(int64_t) { return kInputsPerPass; }
  static int64_t RowsPerPass(int64_t in) {
    return std::max<int64_t>(4, kInputBytesInL2 / (std::min(in, InputsPerPass(in)) * 4));
  }

  // One step of sixteen inputs from `i` on (under a mask, those it selects) of a tile's rows at
  // `x`.
  template <int kRows, int kOuts, bool kMasked>
  KVD_AVX512 static inline __attribute__((always_inline)) void Step(const MatmulArgs& a,
                                                                    const float* x, int64_t o,
                                                                    int64_t i, __mmask16 mask,
                                                                    const char* next, bool prefetch,
                                                                    __m512 (&acc)[kRows][kOuts]) {
    __m512 w[kOuts];
#pragma GCC unroll 8
    for (int k = 0; k < kOuts; ++k) {
      if (prefetch) _mm_prefetch(next + (k * a.in + i) * Weights::kBytes, _MM_HINT_T0);
      w[k] = Weights::template Load<kMasked>(a.weight, (o + k) * a.in + i, mask);
    }
#pragma GCC unroll 8
    for (int rr = 0; rr < kRows; ++rr) {
      const __m512 xv = LoadFloats<kMasked>(x + rr * a.in + i, mask);
#pragma GCC unroll 8
      for (int k = 0; k < kOuts; ++k) acc[rr][k] = _mm512_fmadd_ps(w[k], xv, acc[rr][k]);
    }
  }

  template <int kRows, int kOuts>
  KVD_AVX512 static void Run(const MatmulArgs& a, const Pass& pass, int64_t r, int64_t o,
                             bool prefetch) {
    __m512 acc[kRows][kOuts];
    ZeroSums(acc);
    const float* x = a.x + r * a.in;
    const auto* next =
        static_cast<const char*>(a.weight) + (prefetch ? o + kOuts : o) * a.in * Weights::kBytes;
    const int64_t vector_end = pass.in_begin + (pass.in_end - pass.in_begin) / 16 * 16;
    for (int64_t i = pass.in_begin; i < vector_end; i += 16) {
      Step<kRows, kOuts, false>(a, x, o, i, 0xffff, next, prefetch, acc);
    }
    if (vector_end < pass.in_end) {
      Step<kRows, kOuts, true>(a, x, o, vector_end, TailMask(pass.in_end - vector_end), next,
                               prefetch, acc);
    }
    StoreSums(acc, a, pass, r, o);
  }
};

// bf16 weights against rows rounded to bf16, for CPUs with AVX512-BF16 (products of
// kMinRowsToRoundBf16 rows up to the packed GEMM's): thirty-two inputs a step as sixteen pairs,
// one vdpbf16ps adding both products of each pair of a row and an output feature, the weights
// loaded as they are stored (no widening). RoundRows fills rounded_rows once per call (a slice of
// ParallelMatmul), on the thread that runs it.
struct Bf16PairTiles {
  static constexpr int kWideOuts = 6;
  static constexpr int64_t kInputsPerPass = kTileWeightBytesInL1 / (kWideOuts * 2) / 32 * 32;

  static int64_t InputsPerPass(int64_t) { return kInputsPerPass; }
  static int64_t RowsPerPass(int64_t in) {
    return std::max<int64_t>(4, kInputBytesInL2 / (std::min(in, kInputsPerPass) * 2));
  }
  // Row r's inputs at rounded_rows[r * RowStride(in)], zero from `in` to the stride.
  static int64_t RowStride(int64_t in) { return (in + 31) / 32 * 32; }

  KVD_AVX512_BF16 static void RoundRows(const MatmulArgs& a) {
    const int64_t stride = RowStride(a.in);
    rounded_rows.resize(static_cast<size_t>(a.rows * stride + 32));
    uint16_t* rows = RoundedRows();
    for (int64_t r = 0; r < a.rows; ++r) {
      const float* row = a.x + r * a.in;
      for (int64_t i = 0; i < stride; i += 32) {
        const int64_t left = a.in - i;
        const __mmask16 high = left > 16 ? TailMask(left - 16) : __mmask16{0};
        const __m512bh pairs = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(high, row + i + 16),
                                                   _mm512_maskz_loadu_ps(TailMask(left), row + i));
        _mm512_store_si512(rows + r * stride + i, reinterpret_cast<const __m512i&>(pairs));
      }
    }
  }

  // One step of thirty-two inputs from `i` on (under a mask, the weights it selects).
  template <int kRows, int kOuts, bool kMasked>
  KVD_AVX512_BF16 static inline __attribute__((always_inline)) void Step(
      const MatmulArgs& a, const uint16_t* x, int64_t stride, int64_t o, int64_t i, __mmask32 mask,
      const char* next, bool prefetch, __m512 (&acc)[kRows][kOuts]) {
    const auto* weight = static_cast<const uint16_t*>(a.weight);
    __m512bh w[kOuts];
#pragma GCC unroll 8
    for (int k = 0; k < kOuts; ++k) {
      if (prefetch) _mm_prefetch(next + (k * a.in + i) * 2, _MM_HINT_T0);
      const uint16_t* from = weight + (o + k) * a.in + i;
      const __m512i bits =
          kMasked ? _mm512_maskz_loadu_epi16(mask, from) : _mm512_loadu_si512(from);
      w[k] = reinterpret_cast<const __m512bh&>(bits);
    }
#pragma GCC unroll 8
    for (int rr = 0; rr < kRows; ++rr) {
      const __m512i bits = _mm512_load_si512(x + rr * stride + i);
      const __m512bh xv = reinterpret_cast<const __m512bh&>(bits);
#pragma GCC unroll 8
      for (int k = 0; k < kOuts; ++k) acc[rr][k] = _mm512_dpbf16_ps(acc[rr][k], w[k], xv);
    }
  }

  template <int kRows, int kOuts>
  KVD_AVX512_BF16 static void Run(const MatmulArgs& a, const Pass& pass, int64_t r, int64_t o,
                                  bool prefetch) {
    __m512 acc[kRows][kOuts];
    ZeroSums(acc);
    const int64_t stride = RowStride(a.in);
    const uint16_t* x = RoundedRows() + r * stride;
    const auto* next = static_cast<const char*>(a.weight) + (prefetch ? o + kOuts : o) * a.in * 2;
    const int64_t vector_end = pass.in_begin + (pass.in_end - pass.in_begin) / 32 * 32;
    for (int64_t i = pass.in_begin; i < vector_end; i += 32) {
      Step<kRows, kOuts, false>(a, x, stride, o, i, ~__mmask32{0}, next, prefetch, acc);
    }
    if (vector_end < pass.in_end) {
      const __mmask32 mask = (__mmask32{1} << (pass.in_end - vector_end)) - 1;
      Step<kRows, kOuts, true>(a, x, stride, o, vector_end, mask, next, prefetch, acc);
    }
    StoreSums(acc, a, pass, r, o);
  }

  // rounded_rows' first cache line, where RoundRows starts the rows.
  static uint16_t* RoundedRows() {
    const auto at = reinterpret_cast<uintptr_t>(rounded_rows.data());
    return reinterpret_cast<uint16_t*>((at + 63) / 64 * 64);
  }

  static inline thread_local std::vector<uint16_t> rounded_rows;
};

// The block formats, two blocks (b, b + 1) at a time as 64 bytes whose four-byte groups
// alternate between the blocks (group g of block b at dword 2g, of block b + 1 at 2g + 1), the
// activations in the same order: vpdpbusd then leaves block b's sums in the even dwords and
// b + 1's in the odd ones. `single` says only block b exists.
KVD_AVX512 __m512i InterleaveBlocks(__m512i natural) {
  const __m512i order = _mm512_set_epi32(15, 7, 14, 6, 13, 5, 12, 4, 11, 3, 10, 2, 9, 1, 8, 0);
  return _mm512_permutexvar_epi32(order, natural);
}

// The first `bytes` bytes from `p` (at most 64).
KVD_AVX512 __m512i LoadBytes(const void* p, int64_t bytes) {
  return _mm512_maskz_loadu_epi8(bytes >= 64 ? ~0ull : (1ull << bytes) - 1, p);
}

// int8 weights are signed, the activations too, and vpdpbusd takes one side unsigned: the
// weights go in offset by 128 (one xor), and each dword's sums start from -128 times the sum of
// its four activations, computed once per row and step for every output, so the dot is exact.
struct Int8Format {
  static constexpr bool kHasOffset = false;
  static constexpr int kBlocksPerStep = 2;
  using Operands = __m512i;  // the weights plus 128, as unsigned bytes
  // Blocks [b, b + blocks) of a row.
  KVD_AVX512 static Operands Load(const ConstQuantizedRow& row, int64_t b, int blocks) {
    const __m512i w = InterleaveBlocks(LoadBytes(row.q + b * kQuantBlock, blocks * kQuantBlock));
    return _mm512_xor_si512(w, _mm512_set1_epi8(static_cast<char>(0x80)));
  }
  // The activations of those blocks, in the weights' order, and the offset's share of each
  // dword.
  struct Activations {
    __m512i x;
    __m512i offset_correction;
  };
  KVD_AVX512 static Activations LoadActivations(const int8_t* q, int blocks) {
    const __m512i x = InterleaveBlocks(LoadBytes(q, blocks * kQuantBlock));
    const __m512i offset_sums =
        _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(static_cast<char>(0x80)), x);
    return {x, _mm512_sub_epi32(_mm512_setzero_si512(), offset_sums)};
  }
  KVD_AVX512 static __m512i Dot(const Operands& w, const Activations& x) {
    return _mm512_dpbusd_epi32(x.offset_correction, w, x.x);
  }
  // The step's combined scales (`scales`: one a block) under Dot's dwords: block b's in the
  // even ones, b + 1's in the odd ones.
  KVD_AVX512 static __m512 StepScales(const float* scales) {
    double pair;
    std::memcpy(&pair, scales, sizeof(pair));
    return _mm512_castpd_ps(_mm512_set1_pd(pair));
  }
  static const unsigned char* Prefetched(const ConstQuantizedRow& row, int64_t b) {
    return row.q + b * kQuantBlock;
  }
};

// int4 steps are unsigned already. Byte j of a block holds its weights j (low nibble) and
// j + 16 (high), so four blocks' 64 bytes are four 128-bit lanes whose low nibbles are each
// block's first sixteen weights and whose high nibbles its last sixteen: two vpdpbusd, one
// against each half of every block's activations, leave block b + l's sums in lane l.
struct Int4Format {
  static constexpr bool kHasOffset = true;
  static constexpr int kBlocksPerStep = 4;
  struct Operands {
    __m512i first_halves;
    __m512i second_halves;
  };
  KVD_AVX512 static Operands Load(const ConstQuantizedRow& row, int64_t b, int blocks) {
    const __m512i packed = LoadBytes(row.q + b * (kQuantBlock / 2), blocks * (kQuantBlock / 2));
    const __m512i nibble = _mm512_set1_epi8(15);
    return {_mm512_and_si512(packed, nibble),
            _mm512_and_si512(_mm512_srli_epi16(packed, 4), nibble)};
  }
  struct Activations {
    __m512i first_halves;   // lane l: the first sixteen activations of block b + l
    __m512i second_halves;  // lane l: its last sixteen
  };
  KVD_AVX512 static Activations LoadActivations(const int8_t* q, int blocks) {
    const int64_t bytes = int64_t{blocks} * kQuantBlock;
    const __m512i early = LoadBytes(q, std::min<int64_t>(bytes, 64));  // blocks b, b + 1
    const __m512i late = LoadBytes(q + 64, std::max<int64_t>(bytes - 64, 0));
    return {_mm512_shuffle_i64x2(early, late, _MM_SHUFFLE(2, 0, 2, 0)),
            _mm512_shuffle_i64x2(early, late, _MM_SHUFFLE(3, 1, 3, 1))};
  }
  KVD_AVX512 static __m512i Dot(const Operands& w, const Activations& x) {
    const __m512i first =
        _mm512_dpbusd_epi32(_mm512_setzero_si512(), w.first_halves, x.first_halves);
    return _mm512_dpbusd_epi32(first, w.second_halves, x.second_halves);
  }
  // Block b + l's scale under lane l's four dwords.
  KVD_AVX512 static __m512 StepScales(const float* scales) {
    const __m512i lanes = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    return _mm512_permutexvar_ps(lanes, _mm512_castps128_ps512(_mm_loadu_ps(scales)));
  }
  static const unsigned char* Prefetched(const ConstQuantizedRow& row, int64_t b) {
    return row.q + b * (kQuantBlock / 2);
  }
};

// The blocks whose combined scales are computed at once.
constexpr int64_t kChunk = 16;
// How far ahead of each step a product of one row (a decode step's) also asks for each of the
// tile's weight rows, besides the same blocks of the next output tile: one core streamed a
// one-row int8 product 1.15x faster with both than with the next tile's alone, while tiles of
// three and four rows, which do more work a byte, ran 6-9% slower with both
// (docs/benchmarks.md, "int8 and int4 products of one row: each weight row asked for twice").
constexpr int64_t kNearPrefetchBytes = 1024;

template <class Format>
struct BlockTiles {
  static constexpr int kWideOuts = 4;

  static int64_t InputsPerPass(int64_t in) { return in; }
  static int64_t RowsPerPass(int64_t in) { return std::max<int64_t>(4, kInputBytesInL2 / in); }

  template <int kRows, int kOuts>
  KVD_AVX512 static void Run(const MatmulArgs& a, const Pass&, int64_t r, int64_t o,
                             bool prefetch) {
    const QuantizedActivations& act = *a.activations;
    const int64_t blocks = act.blocks_per_row();
    const QuantizedTileRows<kOuts> tile = ViewQuantizedTileRows<kOuts>(a, o, prefetch);
    const ConstQuantizedRow(&rows)[kOuts] = tile.rows;
    const ConstQuantizedRow(&next_rows)[kOuts] = tile.next;
    // Only where the next tile is asked for and its rows span kNearPrefetchBytes, so that every
    // address that far past this tile's blocks lies in this tile's rows or the next tile's.
    const bool prefetch_near =
        kRows == 1 && prefetch &&
        kOuts * static_cast<int64_t>(RowBytes(a.dtype, a.in)) >= kNearPrefetchBytes;
    __m512 acc[kRows][kOuts];
    ZeroSums(acc);
    // scale_w · scale_x of each (row, output) pair for the chunk's blocks, read back a step's
    // blocks at a time (Format::StepScales).
    alignas(64) float scales[kRows][kOuts][kChunk];
    for (int64_t chunk = 0; chunk < blocks; chunk += kChunk) {
      const int64_t count = std::min(kChunk, blocks - chunk);
      const __mmask16 mask = TailMask(count);
#pragma GCC unroll 8
      for (int k = 0; k < kOuts; ++k) {
        if (prefetch) {
          _mm_prefetch(reinterpret_cast<const char*>(next_rows[k].scales + chunk), _MM_HINT_T0);
          if constexpr (Format::kHasOffset) {
            _mm_prefetch(reinterpret_cast<const char*>(next_rows[k].offsets + chunk), _MM_HINT_T0);
          }
        }
        const __m512 w_scale =
            _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, rows[k].scales + chunk));
#pragma GCC unroll 8
        for (int rr = 0; rr < kRows; ++rr) {
          const __m512 x_scale =
              _mm512_maskz_loadu_ps(mask, &act.scales[(r + rr) * blocks + chunk]);
          _mm512_store_ps(scales[rr][k], _mm512_mul_ps(w_scale, x_scale));
        }
      }
      for (int64_t j = 0; j < count; j += Format::kBlocksPerStep) {
        const int64_t b = chunk + j;
        const int blocks = static_cast<int>(std::min<int64_t>(Format::kBlocksPerStep, count - j));
        typename Format::Operands w[kOuts];
#pragma GCC unroll 8
        for (int k = 0; k < kOuts; ++k) {
          if (prefetch) {
            _mm_prefetch(reinterpret_cast<const char*>(Format::Prefetched(next_rows[k], b)),
                         _MM_HINT_T0);
            if (prefetch_near) {
              _mm_prefetch(reinterpret_cast<const char*>(Format::Prefetched(rows[k], b)) +
                               kNearPrefetchBytes,
                           _MM_HINT_T0);
            }
          }
          w[k] = Format::Load(rows[k], b, blocks);
        }
#pragma GCC unroll 8
        for (int rr = 0; rr < kRows; ++rr) {
          const typename Format::Activations x =
              Format::LoadActivations(act.q.data() + (r + rr) * act.in + b * kQuantBlock, blocks);
#pragma GCC unroll 8
          for (int k = 0; k < kOuts; ++k) {
            acc[rr][k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(Format::Dot(w[k], x)),
                                         Format::StepScales(&scales[rr][k][j]), acc[rr][k]);
          }
        }
      }
    }
    float sums[kRows][kOuts];
    HorizontalSums(acc, sums);
    for (int rr = 0; rr < kRows; ++rr) {
      for (int k = 0; k < kOuts; ++k) {
        float sum = sums[rr][k];
        if constexpr (Format::kHasOffset) sum += OffsetTerm(rows[k], act, r + rr);
        a.out[(r + rr) * a.out_stride + o + k] = sum;
      }
    }
  }

  // Σ over blocks of offset_w · scale_x · Σ q_x: int4's offsets meet the activations' sums.
  KVD_AVX512 static float OffsetTerm(const ConstQuantizedRow& row, const QuantizedActivations& act,
                                     int64_t r) {
    const int64_t blocks = act.blocks_per_row();
    __m512 sum = _mm512_setzero_ps();
    for (int64_t b = 0; b < blocks; b += 16) {
      const __mmask16 mask = TailMask(blocks - b);
      sum = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, row.offsets + b)),
                            _mm512_maskz_loadu_ps(mask, &act.sums[r * blocks + b]), sum);
    }
    return HorizontalSum(sum);
  }
};

// The rows of a pass over output features [o, o + kOuts): four at a time, then what is left.
// The first row tile prefetches the slice's next output tile.
template <class Tiles, int kOuts>
KVD_AVX512 void RunRows(const MatmulArgs& a, const Pass& pass, int64_t row_begin, int64_t o,
                        int64_t slice_end) {
  const bool prefetch = o + 2 * kOuts <= slice_end;
  int64_t r = row_begin;
  for (; r + 4 <= pass.row_end; r += 4) {
    Tiles::template Run<4, kOuts>(a, pass, r, o, prefetch && r == row_begin);
  }
  const bool first = prefetch && r == row_begin;
  switch (pass.row_end - r) {
    case 3:
      return Tiles::template Run<3, kOuts>(a, pass, r, o, first);
    case 2:
      return Tiles::template Run<2, kOuts>(a, pass, r, o, first);
    case 1:
      return Tiles::template Run<1, kOuts>(a, pass, r, o, first);
  }
}

// Passes over blocks of rows and of inputs; in each, output tiles of Tiles::kWideOuts, then of
// four (slices are multiples of four), then single features.
template <class Tiles>
KVD_AVX512 void RunTiles(const MatmulArgs& a) {
  constexpr int kWide = Tiles::kWideOuts;
  const int64_t end = a.first + a.count;
  const int64_t wide_end = a.first + a.count / kWide * kWide;
  const int64_t four_end = wide_end + (end - wide_end) / 4 * 4;
  const int64_t inputs_per_pass = Tiles::InputsPerPass(a.in);
  const int64_t rows_per_pass = Tiles::RowsPerPass(a.in);
  for (int64_t row_begin = 0; row_begin < a.rows; row_begin += rows_per_pass) {
    for (int64_t in_begin = 0; in_begin < a.in; in_begin += inputs_per_pass) {
      const Pass pass{.row_end = std::min(a.rows, row_begin + rows_per_pass),
                      .in_begin = in_begin,
                      .in_end = std::min(a.in, in_begin + inputs_per_pass),
                      .accumulate = in_begin > 0};
      int64_t o = a.first;
      for (; o < wide_end; o += kWide) RunRows<Tiles, kWide>(a, pass, row_begin, o, wide_end);
      if constexpr (kWide != 4) {
        for (; o < four_end; o += 4) RunRows<Tiles, 4>(a, pass, row_begin, o, four_end);
      }
      for (; o < end; ++o) RunRows<Tiles, 1>(a, pass, row_begin, o, end);
    }
  }
}

bool Packs(DType dtype, int64_t rows) {
  return rows >= (IsQuantized(dtype) ? kMinRowsToPackBlocks : kMinRowsToPack);
}

void Run(const MatmulArgs& a) {
  if (Packs(a.dtype, a.rows)) return PackedGemmAvx512(a);
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

// bf16 products of fewer rows than kMinRowsToPackBf16Pairs run on the tiles of pairs.
bool PacksWithBf16Pairs(DType dtype, int64_t rows) {
  return dtype == DType::kBF16 ? rows >= kMinRowsToPackBf16Pairs : Packs(dtype, rows);
}

void RunWithBf16Dots(const MatmulArgs& a) {
  if (a.dtype != DType::kBF16 || a.rows < kMinRowsToRoundBf16) return Run(a);
  if (PacksWithBf16Pairs(a.dtype, a.rows)) return PackedBf16GemmAvx512(a);
  Bf16PairTiles::RoundRows(a);
  RunTiles<Bf16PairTiles>(a);
}

bool PacksWithAmx(DType dtype, int64_t rows) {
  return (dtype == DType::kBF16 && rows >= kMinRowsForAmx) || PacksWithBf16Pairs(dtype, rows);
}

void RunWithAmx(const MatmulArgs& a) {
  if (a.dtype == DType::kBF16 && a.rows >= kMinRowsForAmx) return PackedBf16GemmAmx(a);
  RunWithBf16Dots(a);
}

}  // namespace

MatmulVariant Avx512Matmul() {
  return {.name = "avx512",
          .run = Run,
          .f32_gemm = true,
          .packs = Packs,
          .panel_features = kGemmPanelOutputs};
}

MatmulVariant Avx512Bf16Matmul() {
  MatmulVariant variant = Avx512Matmul();
  variant.name = "avx512_bf16";
  variant.run = RunWithBf16Dots;
  variant.packs = PacksWithBf16Pairs;
  variant.bf16_rounded_rows = kMinRowsToRoundBf16;
  return variant;
}

MatmulVariant AmxBf16Matmul() {
  MatmulVariant variant = Avx512Bf16Matmul();
  variant.name = "amx_bf16";
  variant.run = RunWithAmx;
  variant.packs = PacksWithAmx;
  return variant;
}

}  // namespace kvd::kernels::cpu
