// The grammar rules of JSON text itself (RFC 8259): whitespace, strings, numbers, any value.
// Each rule is made once per builder, on first use; the JSON Schema compiler builds on them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "structured/grammar.h"
#include "structured/json_whitespace.h"

namespace kvd::structured {

// Schemas keep their keys' order: properties are written in the order the schema lists them.
using JsonValue = nlohmann::ordered_json;

class JsonRules {
 public:
  // Under JsonWhitespace::kAny, whitespace between tokens is one space, or one line break and an
  // indent of at most this many spaces and tabs: pretty-printed JSON fits, and a model cannot
  // pad a value with blank lines.
  static constexpr int kMaxIndent = 24;
  // Digits of a number's integer part and of its fraction at most: 16 is past what a double
  // holds exactly, and a model cannot write a number without end. Exponents take 2, so that
  // every number stays finite as a double (JSON parsers read 1e999 as Infinity).
  static constexpr int kMaxDigits = 16;
  static constexpr int kMaxExponentDigits = 2;

  JsonRules(GrammarBuilder& builder, JsonWhitespace whitespace)
      : builder_(builder), whitespace_kind_(whitespace) {}

  GrammarBuilder& builder() { return builder_; }
  // The whitespace allowed after an opening bracket and before a closing one, a ':' or a ',':
  // none when compact.
  void AppendPadding(std::vector<Symbol>& sequence);
  // Any string, every escape form included.
  int32_t String();
  // A string of `min` to `max` characters (max -1: unbounded).
  int32_t StringOfLength(int min, int max);
  int32_t Number();
  int32_t Integer();
  int32_t Boolean();
  int32_t Null();
  // Any JSON value; any object; any array.
  int32_t Value();
  int32_t Object();
  int32_t Array();
  // Exactly `value` as nlohmann's dump writes it (UTF-8, no spaces).
  int32_t Literal(const JsonValue& value);
  // The separators between members and elements, with the whitespace allowed around them.
  void AppendComma(std::vector<Symbol>& sequence);
  void AppendColon(std::vector<Symbol>& sequence);
  // Adds to `rule` the alternative open, `inside`, close, with the whitespace allowed after the
  // opening bracket and before the closing one.
  void AddBracketed(int32_t rule, Symbol open, std::span<const Symbol> inside, Symbol close);
  // An object whose members have any string keys, each holding `value`.
  int32_t MapOf(Symbol value);
  // Zero or more of `item`, each after a comma.
  int32_t MoreAfterCommas(Symbol item);
  // A rule matching "[" (item ("," item){min-1..max-1})? "]" (max -1: unbounded), whitespace
  // as allowed.
  int32_t ArrayOf(Symbol item, int min_items, int max_items);

 private:
  // Nothing, a space, or a line break and an indent.
  int32_t AnyWhitespace();
  // Nothing or one space.
  int32_t OptionalSpace();
  // The whitespace allowed after a ':' or a ','.
  Symbol AfterSeparator();
  int32_t Character();
  // Zero to `count` digits, count <= kMaxDigits.
  int32_t DigitsUpTo(int count);

  GrammarBuilder& builder_;
  const JsonWhitespace whitespace_kind_;
  int32_t whitespace_ = -1;
  int32_t optional_space_ = -1;
  int32_t character_ = -1;
  int32_t string_ = -1;
  std::vector<int32_t> digit_chain_;  // by how many digits may follow
  int32_t number_ = -1;
  int32_t integer_ = -1;
  int32_t boolean_ = -1;
  int32_t null_ = -1;
  int32_t value_ = -1;
  int32_t object_ = -1;
  int32_t array_ = -1;
};

}  // namespace kvd::structured
