// A set of byte values, the terminal of a byte-level grammar: one literal byte, a range, or a
// character class's bytes.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace kvd::structured {

class ByteSet {
 public:
  static ByteSet Of(uint8_t byte) { return Range(byte, byte); }
  static ByteSet Range(uint8_t first, uint8_t last) {
    ByteSet set;
    for (int b = first; b <= last; ++b) set.Add(static_cast<uint8_t>(b));
    return set;
  }
  static ByteSet OfChars(std::string_view chars) {
    ByteSet set;
    for (char c : chars) set.Add(static_cast<uint8_t>(c));
    return set;
  }

  void Add(uint8_t byte) { words_[byte >> 6] |= uint64_t{1} << (byte & 63); }
  void Remove(uint8_t byte) { words_[byte >> 6] &= ~(uint64_t{1} << (byte & 63)); }
  void AddAll(const ByteSet& other) {
    for (int i = 0; i < 4; ++i) words_[i] |= other.words_[i];
  }
  bool Has(uint8_t byte) const { return (words_[byte >> 6] >> (byte & 63)) & 1; }
  bool empty() const { return (words_[0] | words_[1] | words_[2] | words_[3]) == 0; }

  friend bool operator==(const ByteSet&, const ByteSet&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const ByteSet& set) {
    return H::combine(std::move(h), set.words_);
  }

 private:
  std::array<uint64_t, 4> words_{};
};

}  // namespace kvd::structured
