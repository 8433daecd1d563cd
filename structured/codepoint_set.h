// Sets of Unicode scalar values as sorted ranges, and the grammar symbol that matches one
// character of a set as UTF-8 (or as it is written inside a JSON string).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "structured/grammar.h"

namespace kvd::structured {

inline constexpr uint32_t kMaxCodepoint = 0x10FFFF;

class CodepointSet {
 public:
  static CodepointSet Of(uint32_t codepoint) { return Range(codepoint, codepoint); }
  static CodepointSet Range(uint32_t first, uint32_t last) {
    CodepointSet set;
    set.Add(first, last);
    return set;
  }
  // The union of `ranges` (each first <= last), sorted once.
  static CodepointSet FromRanges(std::vector<std::pair<uint32_t, uint32_t>> ranges);
  // Every scalar value (no surrogates).
  static CodepointSet All() { return Range(0, kMaxCodepoint); }

  void Add(uint32_t first, uint32_t last);
  void AddAll(const CodepointSet& other);
  // Every scalar value not in the set.
  CodepointSet Complement() const;
  CodepointSet Intersect(const CodepointSet& other) const;
  // The same set, each letter with its other ASCII case added.
  CodepointSet WithAsciiCases() const;
  bool Contains(uint32_t codepoint) const;
  bool empty() const { return ranges_.empty(); }
  // Sorted, disjoint, not adjacent, surrogates (U+D800–U+DFFF) excluded.
  const std::vector<std::pair<uint32_t, uint32_t>>& ranges() const { return ranges_; }

 private:
  void Normalize();
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;
};

// The UTF-8 encoding of `codepoint`.
std::string EncodeUtf8(uint32_t codepoint);

// A symbol matching one character of `set` in UTF-8: a byte set when every character is ASCII,
// otherwise a new rule of byte-range sequences. The set must not be empty.
Symbol Utf8CharSymbol(GrammarBuilder& builder, const CodepointSet& set);
// A symbol matching one character of `set` as JSON writes it inside a string: literally, except
// `"`, `\` and the control characters, which take their short escape (\n, \t...) or \u00XX.
Symbol JsonStringCharSymbol(GrammarBuilder& builder, const CodepointSet& set);

}  // namespace kvd::structured
