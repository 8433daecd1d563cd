// The AVX-512 variants' product of many rows: a packed GEMM. Each panel of 48 output features
// is transposed once into a thread's buffer (192 KiB, in L2; int8 and int4 add 48 KiB of scales
// and offsets), where every tile of rows reads it, sixteen output features a vector, so that each
// tile's outputs live in registers across the panel's inputs:
// - f32, bf16 and f16 weights: 1,024 inputs widened to f32, tiles of eight rows, each input of a
//   row broadcast (24 FMAs for three vector loads and eight broadcasts). With AVX512-BF16, bf16
//   weights can instead meet rows rounded to bf16: 2,048 inputs as pairs, each vdpbf16ps adding
//   two products.
// - int8 and int4 weights: 4,096 inputs (128 blocks) as unsigned bytes, four inputs of sixteen
//   features a vector, tiles of four rows whose int8 activations are broadcast four at a time:
//   one vpdpbusd adds 64 products, and each block's integer sums are scaled once.
// matmul_avx512.cc runs it on products of enough rows (its Packs, per weight type).
#pragma once

#include <cstdint>

#include "kernels/cpu/matmul.h"

namespace kvd::kernels::cpu {

// The output features of a panel.
inline constexpr int64_t kGemmPanelOutputs = 48;

// Writes the slice [a.first, a.first + a.count) of every row, for any a.dtype (int8 and int4
// from a.activations). The CPU must have what KVD_AVX512 names (avx512_vectors.h).
void PackedGemmAvx512(const MatmulArgs& a);
// The same for bf16 weights, with a.x rounded to bf16 (to nearest, ties to even) as it is packed
// and pairs of products added by vdpbf16ps (which flushes subnormal inputs and sums to zero).
// The CPU must also have AVX512-BF16.
void PackedBf16GemmAvx512(const MatmulArgs& a);
// The same for int8 and int4 weights (gemm_blocks_avx512.cc).
void PackedBlockGemmAvx512(const MatmulArgs& a);
// PackedBf16GemmAvx512's product on AMX tiles (gemm_amx.cc): the same rounding, sums in another
// order. The CPU must also have AMX-BF16, and the OS must allow this process its tiles
// (CpuFeatures::amx_bf16).
void PackedBf16GemmAmx(const MatmulArgs& a);

}  // namespace kvd::kernels::cpu
