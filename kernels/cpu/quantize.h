// Block quantization, the scalar code every matmul variant shares: weights into dtype.h's int8
// and int4 formats (once, at load), back to floats (embedding rows), and activations into int8
// blocks for the integer dot products the quantized matmuls run (once per product).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/dtype.h"

namespace kvd::kernels::cpu {

// A quantized row of n = cols / kQuantBlock blocks is laid out as n f16 scales, for int4 then
// n f16 offsets, then the blocks' weights: 32 int8 a block (int8), or 16 bytes a block whose byte
// j holds weight j in its low nibble and weight j + 16 in its high one (int4). Keeping a row's
// scales together lets a kernel convert eight at a time. An int8 weight is q · scale, an int4
// weight q · scale + offset.
struct QuantizedRow {
  uint16_t* scales = nullptr;
  uint16_t* offsets = nullptr;  // int4 only
  uint8_t* q = nullptr;
};
struct ConstQuantizedRow {
  const uint16_t* scales = nullptr;
  const uint16_t* offsets = nullptr;  // int4 only
  const uint8_t* q = nullptr;
};

// The parts of the row of `cols` weights at `row` (RowBytes(format, cols) bytes, 2-aligned).
QuantizedRow ViewQuantizedRow(DType format, void* row, int64_t cols);
ConstQuantizedRow ViewQuantizedRow(DType format, const void* row, int64_t cols);

// Quantizes a row of `cols` floats (a multiple of kQuantBlock) into `format`'s blocks at `dst`:
// int8 rounds to the nearest multiple of max|w| / 127; int4 spans [min, max] in 15 steps. False,
// with nothing promised about dst, when a value is not finite or a scale overflows f16.
[[nodiscard]] bool QuantizeRow(DType format, const float* src, int64_t cols, void* dst);

// The floats a quantized row stands for.
void DequantizeRow(DType format, const void* src, int64_t cols, float* dst);

// Activations in int8 blocks: x ≈ q · scale per block of kQuantBlock inputs, with the block's
// scale · Σ q for int4's offsets. The offsets meet the same rounded activations as the rest of
// the weight: the exact Σ x would leave the rounding error multiplied by the uncentred
// q · scale part of each weight alone, several times larger than by the weight.
struct QuantizedActivations {
  int64_t rows = 0;
  int64_t in = 0;             // a multiple of kQuantBlock
  std::vector<int8_t> q;      // [rows * in], in [-127, 127]
  std::vector<float> scales;  // [rows * in / kQuantBlock]
  std::vector<float> sums;    // [rows * in / kQuantBlock], scale · Σ q
  std::vector<int32_t> q_sums;  // [rows * in / kQuantBlock], Σ q

  int64_t blocks_per_row() const { return in / kQuantBlock; }
};

// Sizes `out` for [rows, in] activations.
void ResizeActivations(int64_t rows, int64_t in, QuantizedActivations& out);
// Quantizes rows [first, first + count) of x ([out.rows, out.in], row-major) into `out`, sized
// by ResizeActivations. A value that is not finite becomes 0.
void QuantizeActivationRows(const float* x, int64_t first, int64_t count,
                            QuantizedActivations& out);

}  // namespace kvd::kernels::cpu
