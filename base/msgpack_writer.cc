#include "base/msgpack_writer.h"

#include <bit>
#include <limits>

#include "base/check.h"

namespace kvd::base {

void MsgpackWriter::Nil() { Byte(0xc0); }

void MsgpackWriter::Uint(uint64_t value) {
  if (value < 0x80) {
    Byte(static_cast<uint8_t>(value));  // positive fixint
  } else if (value <= 0xff) {
    Byte(0xcc);
    BigEndian(value, 1);
  } else if (value <= 0xffff) {
    Byte(0xcd);
    BigEndian(value, 2);
  } else if (value <= 0xffffffff) {
    Byte(0xce);
    BigEndian(value, 4);
  } else {
    Byte(0xcf);
    BigEndian(value, 8);
  }
}

void MsgpackWriter::Int(int64_t value) {
  if (value >= 0) return Uint(static_cast<uint64_t>(value));
  const auto bits = static_cast<uint64_t>(value);
  if (value >= -32) {
    Byte(static_cast<uint8_t>(bits));  // negative fixint
  } else if (value >= std::numeric_limits<int8_t>::min()) {
    Byte(0xd0);
    BigEndian(bits, 1);
  } else if (value >= std::numeric_limits<int16_t>::min()) {
    Byte(0xd1);
    BigEndian(bits, 2);
  } else if (value >= std::numeric_limits<int32_t>::min()) {
    Byte(0xd2);
    BigEndian(bits, 4);
  } else {
    Byte(0xd3);
    BigEndian(bits, 8);
  }
}

void MsgpackWriter::Double(double value) {
  Byte(0xcb);
  BigEndian(std::bit_cast<uint64_t>(value), 8);
}

void MsgpackWriter::String(std::string_view value) {
  Header(value.size(), 0xa0, 31, {0xd9, 0xda, 0xdb});
  out_.append(value);
}

void MsgpackWriter::Array(uint64_t size) { Header(size, 0x90, 15, {0, 0xdc, 0xdd}); }

void MsgpackWriter::BigEndian(uint64_t value, int width) {
  for (int shift = 8 * (width - 1); shift >= 0; shift -= 8) {
    Byte(static_cast<uint8_t>(value >> shift));
  }
}

void MsgpackWriter::Header(uint64_t size, uint8_t fix, uint64_t fix_limit,
                           const uint8_t (&markers)[3]) {
  KVD_CHECK(size <= 0xffffffff);
  if (size <= fix_limit) {
    Byte(static_cast<uint8_t>(fix | size));
  } else if (markers[0] != 0 && size <= 0xff) {
    Byte(markers[0]);
    BigEndian(size, 1);
  } else if (size <= 0xffff) {
    Byte(markers[1]);
    BigEndian(size, 2);
  } else {
    Byte(markers[2]);
    BigEndian(size, 4);
  }
}

}  // namespace kvd::base
