// The products behind Linear: out[r][o] = Σ_i x[r][i] · w[o][i] over a slice of output features,
// for weights stored [out_features, in_features]. f32, bf16 or f16 weights meet f32 activations,
// each weight converted in registers (no dequantized copy) and accumulated in f32; int8 and int4
// weights meet activations quantized to int8 blocks (quantize.h), each block's integer dot
// product scaled into an f32 sum. One variant per instruction set; the scalar one is the
// reference every other is held to (tests/unit/kernels/cpu_matmul_test.cc).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "kernels/cpu/cpu_features.h"
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
};

// Plain loops, for every CPU.
MatmulVariant ScalarMatmul();
// AVX2 with FMA and F16C.
MatmulVariant Avx2Matmul();
// AVX-512 F, BW, DQ and VL with VNNI.
MatmulVariant Avx512Matmul();
// OpenBLAS's single-threaded SGEMM: f32 weights only.
MatmulVariant OpenBlasMatmul();

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

// Our variants a CPU with `features` runs, fastest first; the scalar one is always last.
std::vector<MatmulVariant> MatmulVariants(const CpuFeatures& features);

// Runs `whole` (every output feature of the weight, first = 0 and count = out_features) on
// `pool`'s threads, in slices of output features that are multiples of four (the kernels'
// tile); a product too small to be worth a hand-off runs on the calling thread. For quantized
// weights it first quantizes x (whole.activations is null).
void ParallelMatmul(const MatmulVariant& variant, const MatmulArgs& whole, ThreadPool& pool);

}  // namespace kvd::kernels::cpu
