// The AVX-512 variant's product of many rows for f32, bf16 and f16 weights: a packed GEMM. Each
// panel of 48 output features by 128 inputs is transposed (and widened to f32) once into L1,
// where every tile of eight rows reads it: sixteen output features a vector, each input of a
// row broadcast, so that 24 accumulators take 24 FMAs for three vector loads and eight
// broadcasts. matmul_avx512.cc runs it on products of kMinRowsToPack rows or more.
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

}  // namespace kvd::kernels::cpu
