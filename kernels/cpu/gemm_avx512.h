// The AVX-512 variants' product of many rows for f32, bf16 and f16 weights: a packed GEMM. Each
// panel of 48 output features by 128 inputs is transposed (and widened to f32) once into L1,
// where every tile of eight rows reads it: sixteen output features a vector, each input of a
// row broadcast, so that 24 accumulators take 24 FMAs for three vector loads and eight
// broadcasts. With AVX512-BF16, bf16 weights can instead meet rows rounded to bf16: panels of
// 256 inputs as pairs, each vdpbf16ps adding two products. matmul_avx512.cc runs them on
// products of kMinRowsToPack rows or more.
#pragma once

#include <cstdint>

#include "kernels/cpu/matmul.h"

namespace kvd::kernels::cpu {

// Below this many rows the packing costs more than the dot-product tiles lose.
inline constexpr int64_t kMinRowsToPack = 32;
// The output features of a panel.
inline constexpr int64_t kGemmPanelOutputs = 48;

// Writes the slice [a.first, a.first + a.count) of every row; a.dtype is f32, bf16 or f16. The
// CPU must have what KVD_AVX512 names (avx512_vectors.h).
void PackedGemmAvx512(const MatmulArgs& a);
// The same for bf16 weights, with a.x rounded to bf16 (to nearest, ties to even) as it is packed
// and pairs of products added by vdpbf16ps (which flushes subnormal inputs and sums to zero).
// The CPU must also have AVX512-BF16.
void PackedBf16GemmAvx512(const MatmulArgs& a);

}  // namespace kvd::kernels::cpu
