#include "structured/codepoint_set.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "base/check.h"

namespace kvd::structured {
namespace {

constexpr uint32_t kSurrogateFirst = 0xD800;
constexpr uint32_t kSurrogateLast = 0xDFFF;

// The largest scalar value of each UTF-8 length.
constexpr uint32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF, kMaxCodepoint};

// Splits [first, last] (same UTF-8 length) into ranges whose encodings are products of byte
// ranges, appending one byte-range sequence per piece.
void AppendByteRangeSequences(uint32_t first, uint32_t last,
                              std::vector<std::vector<ByteSet>>& sequences) {
  for (uint32_t end : kLengthEnds) {
    if (first <= end && end < last) {
      AppendByteRangeSequences(first, end, sequences);
      AppendByteRangeSequences(end + 1, last, sequences);
      return;
    }
  }
  if (last < 0x80) {
    sequences.push_back({ByteSet::Range(static_cast<uint8_t>(first), static_cast<uint8_t>(last))});
    return;
  }
  for (int continuation = 1; continuation < 4; ++continuation) {
    const uint32_t low_bits = (uint32_t{1} << (6 * continuation)) - 1;
    if ((first & ~low_bits) != (last & ~low_bits)) {
      if ((first & low_bits) != 0) {
        AppendByteRangeSequences(first, first | low_bits, sequences);
        AppendByteRangeSequences((first | low_bits) + 1, last, sequences);
        return;
      }
      if ((last & low_bits) != low_bits) {
        AppendByteRangeSequences(first, (last & ~low_bits) - 1, sequences);
        AppendByteRangeSequences(last & ~low_bits, last, sequences);
        return;
      }
    }
  }
  const std::string low = EncodeUtf8(first);
  const std::string high = EncodeUtf8(last);
  KVD_CHECK(low.size() == high.size());
  std::vector<ByteSet> sequence;
  for (size_t i = 0; i < low.size(); ++i) {
    sequence.push_back(
        ByteSet::Range(static_cast<uint8_t>(low[i]), static_cast<uint8_t>(high[i])));
  }
  sequences.push_back(std::move(sequence));
}

std::string JsonEscape(uint32_t codepoint) {
  switch (codepoint) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: return absl::StrFormat("\\u%04x", codepoint);
  }
}

}  // namespace

CodepointSet CodepointSet::FromRanges(std::vector<std::pair<uint32_t, uint32_t>> ranges) {
  CodepointSet set;
  for (auto& [first, last] : ranges) last = std::min(last, kMaxCodepoint);
  std::erase_if(ranges, [](const auto& range) { return range.first > range.second; });
  set.ranges_ = std::move(ranges);
  set.Normalize();
  return set;
}

void CodepointSet::Add(uint32_t first, uint32_t last) {
  last = std::min(last, kMaxCodepoint);
  if (first > last) return;
  ranges_.emplace_back(first, last);
  Normalize();
}

void CodepointSet::AddAll(const CodepointSet& other) {
  ranges_.insert(ranges_.end(), other.ranges_.begin(), other.ranges_.end());
  Normalize();
}

void CodepointSet::Normalize() {
  std::vector<std::pair<uint32_t, uint32_t>> pieces;
  for (const auto& [first, last] : ranges_) {
    // Surrogates are not characters: cut them out.
    if (first < kSurrogateFirst) pieces.emplace_back(first, std::min(last, kSurrogateFirst - 1));
    if (last > kSurrogateLast) pieces.emplace_back(std::max(first, kSurrogateLast + 1), last);
  }
  std::sort(pieces.begin(), pieces.end());
  ranges_.clear();
  for (const auto& piece : pieces) {
    if (!ranges_.empty() && piece.first <= ranges_.back().second + 1) {
      ranges_.back().second = std::max(ranges_.back().second, piece.second);
    } else {
      ranges_.push_back(piece);
    }
  }
}

CodepointSet CodepointSet::Complement() const {
  CodepointSet result;
  uint32_t next = 0;
  for (const auto& [first, last] : ranges_) {
    if (first > next) result.ranges_.emplace_back(next, first - 1);
    next = last + 1;
  }
  if (next <= kMaxCodepoint) result.ranges_.emplace_back(next, kMaxCodepoint);
  result.Normalize();
  return result;
}

CodepointSet CodepointSet::WithAsciiCases() const {
  CodepointSet result = *this;
  for (uint32_t c = 'a'; c <= 'z'; ++c) {
    if (Contains(c)) result.ranges_.emplace_back(c - 32, c - 32);
    if (Contains(c - 32)) result.ranges_.emplace_back(c, c);
  }
  result.Normalize();
  return result;
}

CodepointSet CodepointSet::Intersect(const CodepointSet& other) const {
  CodepointSet result;
  for (const auto& [first, last] : ranges_) {
    for (const auto& [other_first, other_last] : other.ranges_) {
      const uint32_t low = std::max(first, other_first);
      const uint32_t high = std::min(last, other_last);
      if (low <= high) result.ranges_.emplace_back(low, high);
    }
  }
  result.Normalize();
  return result;
}

bool CodepointSet::Contains(uint32_t codepoint) const {
  const auto it = std::upper_bound(
      ranges_.begin(), ranges_.end(), codepoint,
      [](uint32_t value, const std::pair<uint32_t, uint32_t>& range) { return value < range.first; });
  return it != ranges_.begin() && codepoint <= std::prev(it)->second;
}

std::string EncodeUtf8(uint32_t codepoint) {
  std::string out;
  if (codepoint < 0x80) {
    out += static_cast<char>(codepoint);
  } else if (codepoint < 0x800) {
    out += static_cast<char>(0xC0 | (codepoint >> 6));
    out += static_cast<char>(0x80 | (codepoint & 0x3F));
  } else if (codepoint < 0x10000) {
    out += static_cast<char>(0xE0 | (codepoint >> 12));
    out += static_cast<char>(0x80 | ((codepoint >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (codepoint & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (codepoint >> 18));
    out += static_cast<char>(0x80 | ((codepoint >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((codepoint >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (codepoint & 0x3F));
  }
  return out;
}

Symbol Utf8CharSymbol(GrammarBuilder& builder, const CodepointSet& set) {
  KVD_CHECK(!set.empty());
  std::vector<std::vector<ByteSet>> sequences;
  for (const auto& [first, last] : set.ranges()) AppendByteRangeSequences(first, last, sequences);
  // Single bytes merge into one set.
  ByteSet single;
  std::vector<std::vector<ByteSet>> longer;
  for (std::vector<ByteSet>& sequence : sequences) {
    if (sequence.size() == 1) {
      single.AddAll(sequence[0]);
    } else {
      longer.push_back(std::move(sequence));
    }
  }
  if (longer.empty()) return builder.Bytes(single);
  const int32_t rule = builder.AddRule("char");
  if (!single.empty()) {
    const Symbol symbol = builder.Bytes(single);
    builder.AddAlternative(rule, {&symbol, 1});
  }
  for (const std::vector<ByteSet>& sequence : longer) {
    std::vector<Symbol> symbols;
    for (const ByteSet& bytes : sequence) symbols.push_back(builder.Bytes(bytes));
    builder.AddAlternative(rule, symbols);
  }
  return Symbol::Rule(rule);
}

Symbol JsonStringCharSymbol(GrammarBuilder& builder, const CodepointSet& set) {
  CodepointSet escaped;
  for (uint32_t c = 0; c < 0x20; ++c) {
    if (set.Contains(c)) escaped.Add(c, c);
  }
  for (uint32_t c : {uint32_t{'"'}, uint32_t{'\\'}}) {
    if (set.Contains(c)) escaped.Add(c, c);
  }
  const CodepointSet literal = set.Intersect(escaped.Complement());
  if (escaped.empty()) return Utf8CharSymbol(builder, literal);
  const int32_t rule = builder.AddRule("json_char");
  if (!literal.empty()) {
    const Symbol symbol = Utf8CharSymbol(builder, literal);
    builder.AddAlternative(rule, {&symbol, 1});
  }
  for (const auto& [first, last] : escaped.ranges()) {
    for (uint32_t c = first; c <= last; ++c) {
      std::vector<Symbol> symbols;
      builder.AppendLiteral(JsonEscape(c), symbols);
      builder.AddAlternative(rule, symbols);
    }
  }
  return Symbol::Rule(rule);
}

}  // namespace kvd::structured
