// A MessagePack decoder for tests: a whole input as one value tree, for the families
// base::MsgpackWriter writes; null for anything malformed, truncated or followed by more bytes.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvd::testing {

struct MsgpackValue {
  enum class Type { kNil, kBool, kUint, kInt, kDouble, kString, kBytes, kArray };
  Type type = Type::kNil;
  bool boolean = false;
  uint64_t uint = 0;  // kUint
  int64_t sint = 0;   // kInt (negative values)
  double number = 0.0;
  std::string text;  // kString, kBytes
  std::vector<MsgpackValue> items;
};

class MsgpackDecoder {
 public:
  static std::optional<MsgpackValue> Decode(std::string_view bytes) {
    MsgpackDecoder decoder(bytes);
    std::optional<MsgpackValue> value = decoder.Value(0);
    if (!value || decoder.at_ != bytes.size()) return std::nullopt;
    return value;
  }

 private:
  explicit MsgpackDecoder(std::string_view bytes) : bytes_(bytes) {}

  std::optional<uint64_t> BigEndian(size_t width) {
    if (bytes_.size() - at_ < width) return std::nullopt;
    uint64_t value = 0;
    for (size_t i = 0; i < width; ++i) value = value << 8 | static_cast<uint8_t>(bytes_[at_++]);
    return value;
  }
  std::optional<MsgpackValue> Text(MsgpackValue::Type type, std::optional<uint64_t> size) {
    if (!size || bytes_.size() - at_ < *size) return std::nullopt;
    MsgpackValue value{.type = type, .text = std::string(bytes_.substr(at_, *size))};
    at_ += *size;
    return value;
  }
  std::optional<MsgpackValue> Array(std::optional<uint64_t> size, int depth) {
    if (!size || *size > bytes_.size() - at_ || depth > 32) return std::nullopt;
    MsgpackValue value{.type = MsgpackValue::Type::kArray};
    for (uint64_t i = 0; i < *size; ++i) {
      std::optional<MsgpackValue> item = Value(depth + 1);
      if (!item) return std::nullopt;
      value.items.push_back(*std::move(item));
    }
    return value;
  }
  std::optional<MsgpackValue> Unsigned(std::optional<uint64_t> bits) {
    if (!bits) return std::nullopt;
    return MsgpackValue{.type = MsgpackValue::Type::kUint, .uint = *bits};
  }
  std::optional<MsgpackValue> Signed(std::optional<uint64_t> bits, size_t width) {
    if (!bits) return std::nullopt;
    const int shift = static_cast<int>(64 - 8 * width);
    const int64_t value = static_cast<int64_t>(*bits << shift) >> shift;
    if (value >= 0) return MsgpackValue{.type = MsgpackValue::Type::kUint, .uint = uint64_t(value)};
    return MsgpackValue{.type = MsgpackValue::Type::kInt, .sint = value};
  }

  std::optional<MsgpackValue> Value(int depth) {
    if (at_ >= bytes_.size()) return std::nullopt;
    const auto marker = static_cast<uint8_t>(bytes_[at_++]);
    using Type = MsgpackValue::Type;
    if (marker < 0x80) return MsgpackValue{.type = Type::kUint, .uint = marker};
    if (marker >= 0xe0) return Signed(marker, 1);
    if ((marker & 0xf0) == 0x90) return Array(marker & 0x0f, depth);
    if ((marker & 0xe0) == 0xa0) return Text(Type::kString, marker & 0x1f);
    switch (marker) {
      case 0xc0: return MsgpackValue{.type = Type::kNil};
      case 0xc2: return MsgpackValue{.type = Type::kBool, .boolean = false};
      case 0xc3: return MsgpackValue{.type = Type::kBool, .boolean = true};
      case 0xc4: return Text(Type::kBytes, BigEndian(1));
      case 0xc5: return Text(Type::kBytes, BigEndian(2));
      case 0xc6: return Text(Type::kBytes, BigEndian(4));
      case 0xcb: {
        const std::optional<uint64_t> bits = BigEndian(8);
        if (!bits) return std::nullopt;
        return MsgpackValue{.type = Type::kDouble, .number = std::bit_cast<double>(*bits)};
      }
      case 0xcc: return Unsigned(BigEndian(1));
      case 0xcd: return Unsigned(BigEndian(2));
      case 0xce: return Unsigned(BigEndian(4));
      case 0xcf: return Unsigned(BigEndian(8));
      case 0xd0: return Signed(BigEndian(1), 1);
      case 0xd1: return Signed(BigEndian(2), 2);
      case 0xd2: return Signed(BigEndian(4), 4);
      case 0xd3: return Signed(BigEndian(8), 8);
      case 0xd9: return Text(Type::kString, BigEndian(1));
      case 0xda: return Text(Type::kString, BigEndian(2));
      case 0xdb: return Text(Type::kString, BigEndian(4));
      case 0xdc: return Array(BigEndian(2), depth);
      case 0xdd: return Array(BigEndian(4), depth);
      default: return std::nullopt;  // maps, ext and float 32: not written by kvd
    }
  }

  std::string_view bytes_;
  size_t at_ = 0;
};

}  // namespace kvd::testing
