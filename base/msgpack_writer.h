// MessagePack encoding (the subset of the spec kvd writes: nil, integers, 64-bit floats,
// strings and array headers), each value in its shortest form.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace kvd::base {

class MsgpackWriter {
 public:
  void Nil();
  void Uint(uint64_t value);
  void Int(int64_t value);
  void Double(double value);
  void String(std::string_view value);  // UTF-8 text (the str family)
  // The header of an array of `size` values; the values follow.
  void Array(uint64_t size);

  std::string Take() { return std::move(out_); }

 private:
  void Byte(uint8_t value) { out_.push_back(static_cast<char>(value)); }
  // `value` as `width` bytes, big-endian.
  void BigEndian(uint64_t value, int width);
  // The header of a str or an array: `fix` | size when it fits `fix_limit`, else the first of
  // the three 8/16/32-bit size markers (0 where the family has none) that holds it.
  void Header(uint64_t size, uint8_t fix, uint64_t fix_limit, const uint8_t (&markers)[3]);

  std::string out_;
};

}  // namespace kvd::base
