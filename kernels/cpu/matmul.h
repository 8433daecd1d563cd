// The products behind Linear: out[r][o] = Σ_i x[r][i] · w[o][i] over a slice of output features,
// for weights stored [out_features, in_features]. f32, bf16 or f16 weights meet f32 activations,
// each weight converted in registers (no dequantized copy) and accumulated in f32; int8 and int4
// weights meet activations quantized to int8 blocks (quantize.h), each block's integer dot
// product scaled into an f32 sum. One variant per instruction set; the scalar one is the
// reference every other is held to (tests/unit/kernels/cpu_matmul_test.cc).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/dtype.h"

namespace kvd::kernels::cpu {

struct MatmulArgs {
  const float* x = nullptr;  // [rows, in], row-major
  // Quantized weights: x in int8 blocks, [rows, in] (ParallelMatmul quantizes it).
  const QuantizedActivations* activations = nullptr;
  int64_t rows = 0;
  int64_t in = 0;
  const void* weight = nullptr;  // [out_features, in] in `dtype`
  DType dtype = DType::kF32;
  int64_t first = 0;  // the slice of output features computed: [first, first + count)
  int64_t count = 0;
  float* out = nullptr;  // out[r * out_stride + o] for o in the slice
  int64_t out_stride = 0;
};

struct MatmulVariant {
  std::string_view name;
  void (*run)(const MatmulArgs&) = nullptr;
  // Faster than OpenBLAS's SGEMM at f32 products of many rows (docs/benchmarks.md); a variant
  // that is not hands those to OpenBLAS.
  bool f32_gemm = false;
  // Whether a product of `rows` rows of `dtype` weights packs each slice's rows and computes the
  // slice's output features in panels of `panel_features`: ParallelMatmul then cuts fewer, wider
  // slices that start at multiples of the panel. Null: the variant never packs.
  bool (*packs)(DType dtype, int64_t rows) = nullptr;
  int64_t panel_features = 0;
  // From this many rows on, bf16 weights meet x rounded to bf16 (to nearest, ties to even, as
  // FloatToBF16; subnormals count as zero), each pair of products exact and added in f32. 0: x is
  // never rounded.
  int64_t bf16_rounded_rows = 0;
};

// Whether `variant` rounds x to bf16 in a product of `rows` rows of `dtype` weights.
inline bool RoundsRowsToBf16(const MatmulVariant& variant, DType dtype, int64_t rows) {
  return dtype == DType::kBF16 && variant.bf16_rounded_rows > 0 &&
         rows >= variant.bf16_rounded_rows;
}

// Plain loops, for every CPU.
MatmulVariant ScalarMatmul();
// AVX2 with FMA and F16C.
MatmulVariant Avx2Matmul();
// AVX-512 F, BW, DQ and VL with VNNI.
MatmulVariant Avx512Matmul();
// The same with AVX512-BF16: products of several rows of bf16 weights (bf16_rounded_rows) on bf16
// dot products, twice the FMAs' arithmetic (gemm_avx512.h and the tiles of matmul_avx512.cc).
MatmulVariant Avx512Bf16Matmul();
// The same with AMX-BF16 tiles the OS lets this process use: bf16 products of eight rows or more
// on AMX (gemm_avx512.h's PackedBf16GemmAmx), 512 bf16 pairs a tile instruction.
MatmulVariant AmxBf16Matmul();
// OpenBLAS's single-threaded SGEMM: f32 weights only.
MatmulVariant OpenBlasMatmul();
// OpenBLAS's SGEMM on the calling thread alone: out[r * out_stride + o] = Σ_i x[r][i] · w[o][i]
// for the `count` f32 rows of `weight` ([count, in]) and the `rows` rows of x ([rows, in]).
void SingleThreadedSgemm(const float* x, int64_t rows, int64_t in, const float* weight,
                         int64_t count, float* out, int64_t out_stride);

// For the variants' block-format tiles: the quantized rows of output features [o, o + kOuts)
// and of the tile after them, which a tile prefetches as it goes (the same rows when it does
// not).
template <int kOuts>
struct QuantizedTileRows {
  ConstQuantizedRow rows[kOuts];
  ConstQuantizedRow next[kOuts];
};

template <int kOuts>
QuantizedTileRows<kOuts> ViewQuantizedTileRows(const MatmulArgs& a, int64_t o, bool prefetch) {
  const size_t row_bytes = RowBytes(a.dtype, a.in);
  QuantizedTileRows<kOuts> tile;
  for (int k = 0; k < kOuts; ++k) {
    const auto* row = static_cast<const unsigned char*>(a.weight) + (o + k) * row_bytes;
    tile.rows[k] = ViewQuantizedRow(a.dtype, row, a.in);
    tile.next[k] =
        prefetch ? ViewQuantizedRow(a.dtype, row + kOuts * row_bytes, a.in) : tile.rows[k];
  }
  return tile;
}

// One product of a ParallelMatmul group: the variant it runs on and its whole args (first = 0,
// count = every output feature of its weight).
struct MatmulProduct {
  const MatmulVariant* variant = nullptr;
  MatmulArgs whole;
};

// Called once for each slice a ParallelMatmul group computed, on the thread that computed it:
// the slice's part of every product, in the group's order (count 0 where a product had no
// features in it), for an epilogue over outputs still in cache (a bias, a gate).
using MatmulSliceDone = absl::FunctionRef<void(std::span<const MatmulArgs> parts)>;

// Runs a group of products of the same x (rows and in) on `pool`'s threads in one loop: slice i
// of n computes the i-th n-th of every product's output features (multiples of four, the
// kernels' tile, or of the first product's variant's panel where it packs), so that products
// of equal width get the same features in each slice, and then `done`. A group too small to be
// worth a hand-off runs on the calling thread as one slice. Quantized weights meet x quantized once
// for the whole group.
void ParallelMatmul(std::span<const MatmulProduct> group, ThreadPool& pool, MatmulSliceDone done);
// One product alone, without an epilogue.
void ParallelMatmul(const MatmulVariant& variant, const MatmulArgs& whole, ThreadPool& pool);

}  // namespace kvd::kernels::cpu
