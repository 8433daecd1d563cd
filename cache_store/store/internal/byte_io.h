// Little-endian byte encoding for the payload codec and identity fingerprints. The reader
// never reads past its input: every getter reports failure instead.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace kvd::cache_store::internal {

static_assert(std::endian::native == std::endian::little, "the store assumes a little-endian host");

class ByteWriter {
 public:
  void PutU8(uint8_t value) { PutRaw(&value, sizeof(value)); }
  void PutU16(uint16_t value) { PutRaw(&value, sizeof(value)); }
  void PutU32(uint32_t value) { PutRaw(&value, sizeof(value)); }
  void PutU64(uint64_t value) { PutRaw(&value, sizeof(value)); }
  void PutBytes(std::string_view bytes) { bytes_.append(bytes.data(), bytes.size()); }
  // LEB128: seven bits a byte, low first, the high bit set on every byte but the last.
  void PutVarint(uint32_t value) {
    while (value >= 0x80) {
      PutU8(static_cast<uint8_t>(value | 0x80));
      value >>= 7;
    }
    PutU8(static_cast<uint8_t>(value));
  }
  // Length (u64) then bytes.
  void PutString(std::string_view bytes) {
    PutU64(bytes.size());
    PutBytes(bytes);
  }
  // Elements only; the caller writes the count where the format wants it.
  template <typename T>
  void PutArray(const std::vector<T>& values) {
    PutRaw(values.data(), values.size() * sizeof(T));
  }

  const std::string& bytes() const { return bytes_; }
  std::string Release() { return std::move(bytes_); }

 private:
  void PutRaw(const void* data, size_t size) {
    bytes_.append(static_cast<const char*>(data), size);
  }

  std::string bytes_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}

  size_t remaining() const { return bytes_.size(); }

  [[nodiscard]] bool GetU8(uint8_t& value) { return GetRaw(&value, sizeof(value)); }
  [[nodiscard]] bool GetU16(uint16_t& value) { return GetRaw(&value, sizeof(value)); }
  [[nodiscard]] bool GetU32(uint32_t& value) { return GetRaw(&value, sizeof(value)); }
  // At most five bytes, no value beyond 32 bits, and in the shortest form PutVarint writes
  // (no trailing zero byte), so every value has exactly one encoding.
  [[nodiscard]] bool GetVarint(uint32_t& value) {
    value = 0;
    for (int shift = 0; shift < 35; shift += 7) {
      uint8_t byte = 0;
      if (!GetU8(byte)) return false;
      if (shift == 28 && byte > 0x0f) return false;
      if (shift > 0 && byte == 0) return false;
      value |= uint32_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }
  [[nodiscard]] bool GetU64(uint64_t& value) { return GetRaw(&value, sizeof(value)); }
  [[nodiscard]] bool GetString(std::string& value) {
    uint64_t size = 0;
    if (!GetU64(size) || size > remaining()) return false;
    value.assign(bytes_.data(), size);
    bytes_.remove_prefix(size);
    return true;
  }
  // Reads `count` elements; fails before allocating when the input is too short.
  template <typename T>
  [[nodiscard]] bool GetArray(uint64_t count, std::vector<T>& values) {
    if (count > remaining() / sizeof(T)) return false;
    values.resize(count);
    return GetRaw(values.data(), count * sizeof(T));
  }

 private:
  bool GetRaw(void* data, size_t size) {
    if (size > bytes_.size()) return false;
    if (size > 0) std::memcpy(data, bytes_.data(), size);
    bytes_.remove_prefix(size);
    return true;
  }

  std::string_view bytes_;
};

}  // namespace kvd::cache_store::internal
