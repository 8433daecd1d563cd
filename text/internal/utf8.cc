#include "text/internal/utf8.h"

namespace kvd::text::internal {
namespace {

// The shape of a well-formed sequence starting with `lead` (Unicode Table 3-7): total length and
// the range allowed for the second byte. Returns 0 for a byte that cannot start a sequence.
struct SequenceShape {
  size_t length;
  unsigned char second_min;
  unsigned char second_max;
};

SequenceShape ShapeOf(unsigned char lead) {
  if (lead < 0x80) return {1, 0, 0};
  if (lead >= 0xC2 && lead <= 0xDF) return {2, 0x80, 0xBF};
  if (lead == 0xE0) return {3, 0xA0, 0xBF};
  if (lead == 0xED) return {3, 0x80, 0x9F};
  if (lead >= 0xE1 && lead <= 0xEF) return {3, 0x80, 0xBF};
  if (lead == 0xF0) return {4, 0x90, 0xBF};
  if (lead >= 0xF1 && lead <= 0xF3) return {4, 0x80, 0xBF};
  if (lead == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

bool IsContinuation(unsigned char b) { return b >= 0x80 && b <= 0xBF; }

// How many bytes from `pos` fit the sequence shape of the lead byte there, up to its length.
size_t ValidPrefixLength(std::string_view text, size_t pos, const SequenceShape& shape) {
  size_t n = 1;
  while (n < shape.length && pos + n < text.size()) {
    const auto b = static_cast<unsigned char>(text[pos + n]);
    const bool ok = n == 1 ? (b >= shape.second_min && b <= shape.second_max) : IsContinuation(b);
    if (!ok) break;
    ++n;
  }
  return n;
}

}  // namespace

void AppendLossyUtf8(std::string_view bytes, std::string* out) {
  out->reserve(out->size() + bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    // Copy runs of ASCII in one go: the common case.
    size_t ascii_end = i;
    while (ascii_end < bytes.size() && static_cast<unsigned char>(bytes[ascii_end]) < 0x80) {
      ++ascii_end;
    }
    out->append(bytes.data() + i, ascii_end - i);
    i = ascii_end;
    if (i == bytes.size()) break;
    const SequenceShape shape = ShapeOf(static_cast<unsigned char>(bytes[i]));
    if (shape.length == 0) {
      out->append(kReplacementCharacter);
      ++i;
      continue;
    }
    const size_t n = ValidPrefixLength(bytes, i, shape);
    if (n == shape.length) {
      out->append(bytes.data() + i, n);
    } else {
      out->append(kReplacementCharacter);
    }
    i += n;
  }
}

size_t IncompleteUtf8SuffixLength(std::string_view bytes) {
  for (size_t k = 1; k <= 3 && k <= bytes.size(); ++k) {
    const size_t start = bytes.size() - k;
    const auto b = static_cast<unsigned char>(bytes[start]);
    if (IsContinuation(b)) continue;
    const SequenceShape shape = ShapeOf(b);
    if (shape.length > k && ValidPrefixLength(bytes, start, shape) == k) return k;
    return 0;
  }
  return 0;
}

size_t DecodeUtf8At(std::string_view text, size_t pos, char32_t* code_point) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  const SequenceShape shape = ShapeOf(lead);
  if (shape.length == 1) {
    *code_point = lead;
    return 1;
  }
  if (shape.length == 0 || ValidPrefixLength(text, pos, shape) != shape.length) {
    *code_point = static_cast<char32_t>(-1);
    return 1;
  }
  static constexpr unsigned char kLeadMask[] = {0, 0, 0x1F, 0x0F, 0x07};
  char32_t c = lead & kLeadMask[shape.length];
  for (size_t k = 1; k < shape.length; ++k) {
    c = (c << 6) | (static_cast<unsigned char>(text[pos + k]) & 0x3F);
  }
  *code_point = c;
  return shape.length;
}

size_t DecodeLastUtf8(std::string_view text, char32_t* code_point) {
  size_t start = text.size() - 1;
  while (start > 0 && text.size() - start < 4 &&
         IsContinuation(static_cast<unsigned char>(text[start]))) {
    --start;
  }
  if (DecodeUtf8At(text, start, code_point) == text.size() - start) return text.size() - start;
  *code_point = static_cast<char32_t>(-1);
  return 1;
}

bool IsUnicodeWhitespace(char32_t c) {
  if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D);
  switch (c) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

}  // namespace kvd::text::internal
