// Element types of weights and activations, the block-quantized weight formats, and the scalar
// conversions between them.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace kvd::kernels {

// kF32, kBF16 and kF16 are element types. kInt8 and kInt4 are weight formats of blocks of
// kQuantBlock weights along a row (layout: kernels/cpu/quantize.h): int8 is q · scale with q in
// [-127, 127] and an f16 scale; int4 is q · scale + offset with q in [0, 15] and an f16 scale
// and offset.
enum class DType : uint8_t { kF32, kBF16, kF16, kInt8, kInt4 };

inline constexpr int64_t kQuantBlock = 32;

constexpr bool IsQuantized(DType dtype) { return dtype == DType::kInt8 || dtype == DType::kInt4; }

// Bytes of one element of an element type.
constexpr size_t DTypeSize(DType dtype) { return dtype == DType::kF32 ? 4 : 2; }

// Bytes of one block of kQuantBlock weights in a quantized format, its scale (and offset) included.
constexpr size_t QuantBlockBytes(DType dtype) {
  return dtype == DType::kInt8 ? 2 + kQuantBlock : 4 + kQuantBlock / 2;
}

// Bytes of a row of `cols` values; a quantized row's cols are a multiple of kQuantBlock.
constexpr size_t RowBytes(DType dtype, int64_t cols) {
  return IsQuantized(dtype) ? static_cast<size_t>(cols / kQuantBlock) * QuantBlockBytes(dtype)
                            : static_cast<size_t>(cols) * DTypeSize(dtype);
}

constexpr std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "f32";
    case DType::kBF16:
      return "bf16";
    case DType::kF16:
      return "f16";
    case DType::kInt8:
      return "int8";
    case DType::kInt4:
      return "int4";
  }
  return "unknown";
}

// The type DTypeName names ("f32", "bf16", "f16", "int8", "int4"); none for anything else, such
// as "auto".
constexpr std::optional<DType> DTypeFromName(std::string_view name) {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16, DType::kInt8, DType::kInt4}) {
    if (DTypeName(dtype) == name) return dtype;
  }
  return std::nullopt;
}

// What a configuration or a flag may name as the type of weight matrices: "auto" (the
// checkpoint's own) and every DTypeName.
inline constexpr std::array<std::string_view, 6> kWeightTypeChoices = {"auto", "f32",  "bf16",
                                                                       "f16",  "int8", "int4"};

inline float BF16ToFloat(uint16_t bits) { return std::bit_cast<float>(uint32_t{bits} << 16); }

// Round to nearest even, as PyTorch does; NaN stays NaN.
inline uint16_t FloatToBF16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

inline float F16ToFloat(uint16_t bits) {
  const uint32_t sign = uint32_t{bits & 0x8000u} << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    if (mantissa == 0) return std::bit_cast<float>(sign);
    // Subnormal: value = mantissa * 2^-24.
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

// Round to nearest even, subnormals included; beyond the largest f16 (65504) a value becomes
// inf, as PyTorch's conversion does; NaN stays NaN.
inline uint16_t FloatToF16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t abs_bits = bits & 0x7fffffffu;
  if (abs_bits > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);
  if (abs_bits >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow to inf
  if (abs_bits < 0x38800000u) {
    // Below 2^-14, the smallest normal f16: a multiple of 2^-24. Up to 2^-25 rounds to zero (2^-25
    // itself is a tie, which goes to the even zero).
    if (abs_bits <= 0x33000000u) return static_cast<uint16_t>(sign);
    // value = significand * 2^(exponent - 150), so in units of 2^-24 it is the significand
    // shifted right by 126 - exponent (14 to 24 here), rounded to nearest even. Rounding up may
    // carry into 0x400, the smallest normal, which is its correct encoding.
    const uint32_t significand = (abs_bits & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - (abs_bits >> 23);
    const uint32_t remainder = significand & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    uint32_t units = significand >> shift;
    if (remainder > halfway || (remainder == halfway && (units & 1u) != 0)) ++units;
    return static_cast<uint16_t>(sign | units);
  }
  const uint32_t rounded = abs_bits + 0xfffu + ((abs_bits >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - (112u << 23)) >> 13));
}

// Element i of an array of an element type at `data`, which may be misaligned (a mapped file).
inline float ElementAsFloat(const void* data, DType dtype, int64_t i) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  if (dtype == DType::kF32) {
    float value;
    std::memcpy(&value, bytes + 4 * i, sizeof(value));
    return value;
  }
  uint16_t bits;
  std::memcpy(&bits, bytes + 2 * i, sizeof(bits));
  return dtype == DType::kBF16 ? BF16ToFloat(bits) : F16ToFloat(bits);
}

}  // namespace kvd::kernels
