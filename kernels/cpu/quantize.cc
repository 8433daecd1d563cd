#include "kernels/cpu/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/check.h"

namespace kvd::kernels::cpu {
namespace {

// Round to nearest even for |v| < 2^22, without a call to nearbyint (the baseline x86-64 has no
// rounding instruction); NaN stays NaN.
inline float RoundToInteger(float v) {
  constexpr float kMagic = 12582912.0f;  // 1.5 · 2^23
  return (v + kMagic) - kMagic;
}

// v rounded and clamped to [lo, hi]; NaN gives 0.
inline int32_t RoundClamped(float v, float lo, float hi) {
  const float r = RoundToInteger(v);
  if (!(r == r)) return 0;
  return static_cast<int32_t>(std::clamp(r, lo, hi));
}

// A scale as f16 bits and the float those bits are; false when it is not a finite f16.
bool ToF16(float value, uint16_t* bits, float* rounded) {
  *bits = FloatToF16(value);
  *rounded = F16ToFloat(*bits);
  return std::isfinite(*rounded);
}

// Block b of the row's weights `w` into `row`.
bool QuantizeInt8Block(const float* w, const QuantizedRow& row, int64_t b) {
  float amax = 0.0f;
  for (int64_t i = 0; i < kQuantBlock; ++i) {
    if (!std::isfinite(w[i])) return false;
    amax = std::max(amax, std::fabs(w[i]));
  }
  float scale;
  if (!ToF16(amax / 127.0f, &row.scales[b], &scale)) return false;
  const float inverse = scale > 0.0f ? 1.0f / scale : 0.0f;
  auto* q = reinterpret_cast<int8_t*>(row.q + b * kQuantBlock);
  for (int64_t i = 0; i < kQuantBlock; ++i) {
    q[i] = static_cast<int8_t>(RoundClamped(w[i] * inverse, -127.0f, 127.0f));
  }
  return true;
}

// An int4 block's scale and offset, as f16 bits, and its steps.
struct Int4Fit {
  uint16_t scale = 0;
  uint16_t offset = 0;
  uint8_t q[kQuantBlock] = {};
};

// Rounds each weight of a block to its step of (scale, offset), both first rounded to f16;
// returns the squared error, or infinity when either is not a finite f16.
float RoundInt4Block(const float* w, float scale, float offset, Int4Fit& fit) {
  float rounded_scale, rounded_offset;
  if (!ToF16(scale, &fit.scale, &rounded_scale) || !ToF16(offset, &fit.offset, &rounded_offset)) {
    return std::numeric_limits<float>::infinity();
  }
  const float inverse = rounded_scale > 0.0f ? 1.0f / rounded_scale : 0.0f;
  float error = 0.0f;
  for (int64_t i = 0; i < kQuantBlock; ++i) {
    fit.q[i] = static_cast<uint8_t>(RoundClamped((w[i] - rounded_offset) * inverse, 0.0f, 15.0f));
    const float e = static_cast<float>(fit.q[i]) * rounded_scale + rounded_offset - w[i];
    error += e * e;
  }
  return error;
}

// Starts from the span [min, max] in 15 steps, then refits scale and offset by least squares to
// the steps the weights rounded to, as long as that lowers the squared error.
bool QuantizeInt4Block(const float* w, const QuantizedRow& row, int64_t b) {
  float lo = w[0], hi = w[0];
  for (int64_t i = 0; i < kQuantBlock; ++i) {
    if (!std::isfinite(w[i])) return false;
    lo = std::min(lo, w[i]);
    hi = std::max(hi, w[i]);
  }
  Int4Fit fit;
  float error = RoundInt4Block(w, (hi - lo) / 15.0f, lo, fit);
  if (!std::isfinite(error)) return false;
  constexpr int kRefits = 4;
  for (int refit = 0; refit < kRefits && error > 0.0f; ++refit) {
    double sum_q = 0, sum_w = 0, sum_qq = 0, sum_qw = 0;
    for (int64_t i = 0; i < kQuantBlock; ++i) {
      sum_q += fit.q[i];
      sum_w += w[i];
      sum_qq += static_cast<double>(fit.q[i]) * fit.q[i];
      sum_qw += static_cast<double>(fit.q[i]) * w[i];
    }
    const double n = kQuantBlock;
    const double denominator = n * sum_qq - sum_q * sum_q;
    if (denominator <= 0.0) break;
    const double scale = (n * sum_qw - sum_q * sum_w) / denominator;
    const double offset = (sum_w - scale * sum_q) / n;
    Int4Fit candidate;
    const float candidate_error =
        RoundInt4Block(w, static_cast<float>(scale), static_cast<float>(offset), candidate);
    if (!(candidate_error < error)) break;
    error = candidate_error;
    fit = candidate;
  }
  row.scales[b] = fit.scale;
  row.offsets[b] = fit.offset;
  uint8_t* q = row.q + b * (kQuantBlock / 2);
  for (int64_t j = 0; j < kQuantBlock / 2; ++j) {
    q[j] = static_cast<uint8_t>(fit.q[j] | (fit.q[j + kQuantBlock / 2] << 4));
  }
  return true;
}

}  // namespace

QuantizedRow ViewQuantizedRow(DType format, void* row, int64_t cols) {
  KVD_CHECK(IsQuantized(format) && cols % kQuantBlock == 0);
  const int64_t blocks = cols / kQuantBlock;
  auto* scales = static_cast<uint16_t*>(row);
  if (format == DType::kInt8) {
    return {scales, nullptr, reinterpret_cast<uint8_t*>(scales + blocks)};
  }
  return {scales, scales + blocks, reinterpret_cast<uint8_t*>(scales + 2 * blocks)};
}

ConstQuantizedRow ViewQuantizedRow(DType format, const void* row, int64_t cols) {
  const QuantizedRow view = ViewQuantizedRow(format, const_cast<void*>(row), cols);
  return {view.scales, view.offsets, view.q};
}

bool QuantizeRow(DType format, const float* src, int64_t cols, void* dst) {
  const QuantizedRow row = ViewQuantizedRow(format, dst, cols);
  for (int64_t b = 0; b < cols / kQuantBlock; ++b) {
    const float* w = src + b * kQuantBlock;
    const bool ok =
        format == DType::kInt8 ? QuantizeInt8Block(w, row, b) : QuantizeInt4Block(w, row, b);
    if (!ok) return false;
  }
  return true;
}

void DequantizeRow(DType format, const void* src, int64_t cols, float* dst) {
  const ConstQuantizedRow row = ViewQuantizedRow(format, src, cols);
  for (int64_t b = 0; b < cols / kQuantBlock; ++b) {
    float* out = dst + b * kQuantBlock;
    const float scale = F16ToFloat(row.scales[b]);
    if (format == DType::kInt8) {
      const auto* q = reinterpret_cast<const int8_t*>(row.q + b * kQuantBlock);
      for (int64_t i = 0; i < kQuantBlock; ++i) out[i] = static_cast<float>(q[i]) * scale;
    } else {
      const float offset = F16ToFloat(row.offsets[b]);
      const uint8_t* q = row.q + b * (kQuantBlock / 2);
      for (int64_t j = 0; j < kQuantBlock / 2; ++j) {
        out[j] = static_cast<float>(q[j] & 15) * scale + offset;
        out[j + kQuantBlock / 2] = static_cast<float>(q[j] >> 4) * scale + offset;
      }
    }
  }
}

void ResizeActivations(int64_t rows, int64_t in, QuantizedActivations& out) {
  KVD_CHECK(in % kQuantBlock == 0);
  out.rows = rows;
  out.in = in;
  out.q.resize(static_cast<size_t>(rows * in));
  out.scales.resize(static_cast<size_t>(rows * out.blocks_per_row()));
  out.sums.resize(out.scales.size());
  out.q_sums.resize(out.scales.size());
}

void QuantizeActivationRows(const float* x, int64_t first, int64_t count,
                            QuantizedActivations& out) {
  KVD_CHECK(first >= 0 && first + count <= out.rows);
  const int64_t blocks = out.blocks_per_row();
  for (int64_t r = first; r < first + count; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      const float* v = x + r * out.in + b * kQuantBlock;
      float amax = 0.0f;
      for (int64_t i = 0; i < kQuantBlock; ++i) amax = std::max(amax, std::fabs(v[i]));
      const float scale = amax / 127.0f;
      const float inverse = scale > 0.0f && std::isfinite(scale) ? 1.0f / scale : 0.0f;
      int8_t* q = out.q.data() + r * out.in + b * kQuantBlock;
      int32_t sum = 0;
      for (int64_t i = 0; i < kQuantBlock; ++i) {
        q[i] = static_cast<int8_t>(RoundClamped(v[i] * inverse, -127.0f, 127.0f));
        sum += q[i];
      }
      out.scales[r * blocks + b] = scale;
      out.sums[r * blocks + b] = scale * static_cast<float>(sum);
      out.q_sums[r * blocks + b] = sum;
    }
  }
}

}  // namespace kvd::kernels::cpu
