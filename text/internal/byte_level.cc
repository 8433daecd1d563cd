#include "text/internal/byte_level.h"

#include <cstdint>

#include "text/internal/utf8.h"

namespace kvd::text::internal {
namespace {

// Code points of the alphabet end below this bound (the last one is U+0143).
constexpr char32_t kAlphabetEnd = 0x144;

struct Alphabet {
  std::array<char32_t, 256> code_point{};    // byte → character
  std::array<int16_t, kAlphabetEnd> byte{};  // character → byte, -1 outside the alphabet
  std::array<std::string, 256> symbol;       // byte → UTF-8 of its character
};

void AppendUtf8(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else {  // The alphabet stays below U+0800.
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

Alphabet MakeAlphabet() {
  Alphabet a;
  a.byte.fill(-1);
  auto printable = [](int b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  };
  char32_t next_extra = 256;
  for (int b = 0; b < 256; ++b) {
    const char32_t c = printable(b) ? static_cast<char32_t>(b) : next_extra++;
    a.code_point[b] = c;
    a.byte[c] = static_cast<int16_t>(b);
    AppendUtf8(c, &a.symbol[b]);
  }
  return a;
}

const Alphabet& GetAlphabet() {
  static const Alphabet* const alphabet = new Alphabet(MakeAlphabet());
  return *alphabet;
}

}  // namespace

const std::array<std::string, 256>& ByteLevelSymbols() { return GetAlphabet().symbol; }

std::string EncodeByteLevel(std::string_view bytes) {
  const Alphabet& a = GetAlphabet();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char b : bytes) out += a.symbol[static_cast<unsigned char>(b)];
  return out;
}

std::optional<std::string> DecodeByteLevel(std::string_view token) {
  const Alphabet& a = GetAlphabet();
  std::string out;
  out.reserve(token.size());
  size_t pos = 0;
  while (pos < token.size()) {
    char32_t c;
    pos += DecodeUtf8At(token, pos, &c);
    if (c >= kAlphabetEnd || a.byte[c] < 0) return std::nullopt;
    out.push_back(static_cast<char>(a.byte[c]));
  }
  return out;
}

}  // namespace kvd::text::internal
