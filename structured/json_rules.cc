#include "structured/json_rules.h"

#include <vector>

#include "structured/codepoint_set.h"

namespace kvd::structured {
namespace {

Symbol Ref(int32_t rule) { return Symbol::Rule(rule); }

}  // namespace

int32_t JsonRules::AnyWhitespace() {
  if (whitespace_ >= 0) return whitespace_;
  // ws ::= "" | " " | "\n" indent_1 ; indent_k ::= "" | [ \t] indent_{k+1}, indent_max ::= "".
  // The reference ends its sequence, so the matcher's stack stays flat through the indent.
  const Symbol indent_char = builder_.Bytes(ByteSet::OfChars(" \t"));
  int32_t indent = builder_.AddRule("indent_end");
  builder_.AddAlternative(indent, {});
  for (int k = kMaxIndent; k > 0; --k) {
    const int32_t rule = builder_.AddRule("indent");
    const Symbol sequence[] = {indent_char, Symbol::Rule(indent)};
    builder_.AddAlternative(rule, sequence);
    builder_.AddAlternative(rule, {});
    indent = rule;
  }
  whitespace_ = builder_.AddRule("ws");
  builder_.AddAlternative(whitespace_, {});
  const Symbol space = builder_.Bytes(ByteSet::Of(' '));
  builder_.AddAlternative(whitespace_, {&space, 1});
  const Symbol line[] = {builder_.Bytes(ByteSet::Of('\n')), Symbol::Rule(indent)};
  builder_.AddAlternative(whitespace_, line);
  return whitespace_;
}

int32_t JsonRules::OptionalSpace() {
  if (optional_space_ >= 0) return optional_space_;
  optional_space_ = builder_.AddRule("optional_space");
  builder_.AddAlternative(optional_space_, {});
  const Symbol space = builder_.Bytes(ByteSet::Of(' '));
  builder_.AddAlternative(optional_space_, {&space, 1});
  return optional_space_;
}

void JsonRules::AppendPadding(std::vector<Symbol>& sequence) {
  if (whitespace_kind_ == JsonWhitespace::kAny) sequence.push_back(Ref(AnyWhitespace()));
}

Symbol JsonRules::AfterSeparator() {
  return Ref(whitespace_kind_ == JsonWhitespace::kAny ? AnyWhitespace() : OptionalSpace());
}

int32_t JsonRules::Character() {
  if (character_ >= 0) return character_;
  character_ = builder_.AddRule("json_char");
  CodepointSet literal = CodepointSet::Range(0x20, kMaxCodepoint);
  literal = literal.Intersect(CodepointSet::Of('"').Complement());
  literal = literal.Intersect(CodepointSet::Of('\\').Complement());
  const Symbol plain = Utf8CharSymbol(builder_, literal);
  builder_.AddAlternative(character_, {&plain, 1});
  const Symbol backslash = builder_.Bytes(ByteSet::Of('\\'));
  const Symbol short_escape[] = {backslash, builder_.Bytes(ByteSet::OfChars("\"\\/bfnrt"))};
  builder_.AddAlternative(character_, short_escape);
  // \uXXXX outside the surrogates: a surrogate escape would count as two characters where
  // JSON Schema counts one, and a lone one is refused by strict parsers.
  ByteSet hex = ByteSet::Range('0', '9');
  hex.AddAll(ByteSet::Range('a', 'f'));
  hex.AddAll(ByteSet::Range('A', 'F'));
  const Symbol hex_digit = builder_.Bytes(hex);
  const Symbol u = builder_.Bytes(ByteSet::Of('u'));
  ByteSet not_d = ByteSet::Range('0', '9');
  not_d.AddAll(ByteSet::Range('a', 'c'));
  not_d.AddAll(ByteSet::Range('A', 'C'));
  not_d.AddAll(ByteSet::Range('e', 'f'));
  not_d.AddAll(ByteSet::Range('E', 'F'));
  const Symbol below_or_above[] = {backslash, u,         builder_.Bytes(not_d),
                                   hex_digit, hex_digit, hex_digit};
  builder_.AddAlternative(character_, below_or_above);
  const Symbol d_low[] = {backslash,
                          u,
                          builder_.Bytes(ByteSet::OfChars("dD")),
                          builder_.Bytes(ByteSet::Range('0', '7')),
                          hex_digit,
                          hex_digit};
  builder_.AddAlternative(character_, d_low);
  return character_;
}

int32_t JsonRules::String() {
  if (string_ >= 0) return string_;
  string_ = StringOfLength(0, -1);
  return string_;
}

int32_t JsonRules::StringOfLength(int min, int max) {
  const Symbol quote = builder_.Bytes(ByteSet::Of('"'));
  const Symbol character = Ref(Character());
  std::vector<Symbol> sequence = {quote};
  for (int i = 0; i < min; ++i) sequence.push_back(character);
  if (max < 0) {
    const int32_t rest = builder_.AddRule("string_chars");
    const Symbol loop[] = {character, Ref(rest)};
    builder_.AddAlternative(rest, loop);
    builder_.AddAlternative(rest, {});
    sequence.push_back(Ref(rest));
  } else if (max > min) {
    int32_t next = -1;
    for (int k = max - min; k > 0; --k) {
      const int32_t rule = builder_.AddRule("string_optional_char");
      std::vector<Symbol> optional = {character};
      if (next >= 0) optional.push_back(Ref(next));
      builder_.AddAlternative(rule, optional);
      builder_.AddAlternative(rule, {});
      next = rule;
    }
    sequence.push_back(Ref(next));
  }
  sequence.push_back(quote);
  const int32_t rule = builder_.AddRule("string");
  builder_.AddAlternative(rule, sequence);
  return rule;
}

int32_t JsonRules::DigitsUpTo(int count) {
  // digits_k ::= "" | [0-9] digits_{k+1}, for the last `count` of kMaxDigits.
  if (digit_chain_.empty()) {
    const Symbol digit = builder_.Bytes(ByteSet::Range('0', '9'));
    int32_t next = builder_.AddRule("digits_end");
    builder_.AddAlternative(next, {});
    digit_chain_.push_back(next);
    for (int k = 0; k < kMaxDigits; ++k) {
      const int32_t rule = builder_.AddRule("digits");
      const Symbol sequence[] = {digit, Symbol::Rule(next)};
      builder_.AddAlternative(rule, sequence);
      builder_.AddAlternative(rule, {});
      digit_chain_.push_back(rule);
      next = rule;
    }
  }
  return digit_chain_[count];
}

int32_t JsonRules::Integer() {
  if (integer_ >= 0) return integer_;
  // "-"? ("0" | [1-9][0-9]*)
  const int32_t magnitude = builder_.AddRule("integer_magnitude");
  const Symbol zero = builder_.Bytes(ByteSet::Of('0'));
  builder_.AddAlternative(magnitude, {&zero, 1});
  const Symbol leading[] = {builder_.Bytes(ByteSet::Range('1', '9')),
                            Ref(DigitsUpTo(kMaxDigits - 1))};
  builder_.AddAlternative(magnitude, leading);
  integer_ = builder_.AddRule("integer");
  const Symbol negative[] = {builder_.Bytes(ByteSet::Of('-')), Ref(magnitude)};
  builder_.AddAlternative(integer_, negative);
  const Symbol positive = Ref(magnitude);
  builder_.AddAlternative(integer_, {&positive, 1});
  return integer_;
}

int32_t JsonRules::Number() {
  if (number_ >= 0) return number_;
  const Symbol digit = builder_.Bytes(ByteSet::Range('0', '9'));
  // fraction ::= "" | "." [0-9]+ ; exponent ::= "" | [eE] [+-]? [0-9]+
  const int32_t fraction = builder_.AddRule("fraction");
  builder_.AddAlternative(fraction, {});
  const Symbol fraction_digits[] = {builder_.Bytes(ByteSet::Of('.')), digit,
                                    Ref(DigitsUpTo(kMaxDigits - 1))};
  builder_.AddAlternative(fraction, fraction_digits);
  const int32_t exponent = builder_.AddRule("exponent");
  builder_.AddAlternative(exponent, {});
  const Symbol e = builder_.Bytes(ByteSet::OfChars("eE"));
  const Symbol unsigned_exponent[] = {e, digit, Ref(DigitsUpTo(kMaxExponentDigits - 1))};
  builder_.AddAlternative(exponent, unsigned_exponent);
  const Symbol signed_exponent[] = {e, builder_.Bytes(ByteSet::OfChars("+-")), digit,
                                    Ref(DigitsUpTo(kMaxExponentDigits - 1))};
  builder_.AddAlternative(exponent, signed_exponent);
  number_ = builder_.AddRule("number");
  const Symbol sequence[] = {Ref(Integer()), Ref(fraction), Ref(exponent)};
  builder_.AddAlternative(number_, sequence);
  return number_;
}

int32_t JsonRules::Boolean() {
  if (boolean_ >= 0) return boolean_;
  boolean_ = builder_.AddRule("boolean");
  for (const char* word : {"true", "false"}) {
    std::vector<Symbol> sequence;
    builder_.AppendLiteral(word, sequence);
    builder_.AddAlternative(boolean_, sequence);
  }
  return boolean_;
}

int32_t JsonRules::Null() {
  if (null_ < 0) null_ = builder_.AddLiteralRule("null", "null");
  return null_;
}

void JsonRules::AppendComma(std::vector<Symbol>& sequence) {
  AppendPadding(sequence);
  sequence.push_back(builder_.Bytes(ByteSet::Of(',')));
  sequence.push_back(AfterSeparator());
}

void JsonRules::AppendColon(std::vector<Symbol>& sequence) {
  AppendPadding(sequence);
  sequence.push_back(builder_.Bytes(ByteSet::Of(':')));
  sequence.push_back(AfterSeparator());
}

int32_t JsonRules::Value() {
  if (value_ >= 0) return value_;
  value_ = builder_.AddRule("value");
  for (int32_t rule : {Object(), Array(), String(), Number(), Boolean(), Null()}) {
    const Symbol symbol = Ref(rule);
    builder_.AddAlternative(value_, {&symbol, 1});
  }
  return value_;
}

int32_t JsonRules::Object() {
  if (object_ >= 0) return object_;
  // The rule exists before the values it holds, which may be objects again.
  object_ = builder_.AddRule("object");
  Value();
  const Symbol map = Ref(MapOf(Ref(value_)));
  builder_.AddAlternative(object_, {&map, 1});
  return object_;
}

int32_t JsonRules::MapOf(Symbol value) {
  // member ::= string ":" value ; map ::= "{" (member more)? "}", whitespace as allowed
  const int32_t member = builder_.AddRule("member");
  std::vector<Symbol> member_sequence = {Ref(String())};
  AppendColon(member_sequence);
  member_sequence.push_back(value);
  builder_.AddAlternative(member, member_sequence);
  const Symbol open = builder_.Bytes(ByteSet::Of('{'));
  const Symbol close = builder_.Bytes(ByteSet::Of('}'));
  const int32_t map = builder_.AddRule("map");
  AddBracketed(map, open, {}, close);
  const Symbol members[] = {Ref(member), Ref(MoreAfterCommas(Ref(member)))};
  AddBracketed(map, open, members, close);
  return map;
}

int32_t JsonRules::MoreAfterCommas(Symbol item) {
  // more ::= "," item more | "", whitespace as allowed
  const int32_t more = builder_.AddRule("more");
  std::vector<Symbol> sequence;
  AppendComma(sequence);
  sequence.push_back(item);
  sequence.push_back(Ref(more));
  builder_.AddAlternative(more, sequence);
  builder_.AddAlternative(more, {});
  return more;
}

int32_t JsonRules::Array() {
  if (array_ >= 0) return array_;
  Value();
  array_ = ArrayOf(Ref(value_), 0, -1);
  return array_;
}

int32_t JsonRules::ArrayOf(Symbol item, int min_items, int max_items) {
  const int32_t array = builder_.AddRule("array");
  const Symbol open = builder_.Bytes(ByteSet::Of('['));
  const Symbol close = builder_.Bytes(ByteSet::Of(']'));
  if (min_items == 0) {
    AddBracketed(array, open, {}, close);
    if (max_items == 0) return array;
  }
  // rest_k: the elements after the k-th, built from the last count backwards.
  const auto comma_item = [&](std::vector<Symbol>& sequence) {
    AppendComma(sequence);
    sequence.push_back(item);
  };
  int32_t rest = -1;
  const int counted = max_items < 0 ? std::max(min_items, 1) : max_items;
  for (int k = counted; k >= 1; --k) {
    const int32_t rule = builder_.AddRule("array_rest");
    if (k == counted) {
      if (max_items < 0) {  // unbounded: rest ::= "," item rest | ""
        std::vector<Symbol> loop;
        comma_item(loop);
        loop.push_back(Ref(rule));
        builder_.AddAlternative(rule, loop);
      }
      builder_.AddAlternative(rule, {});
    } else {
      std::vector<Symbol> more;
      comma_item(more);
      more.push_back(Ref(rest));
      builder_.AddAlternative(rule, more);
      if (k >= min_items) builder_.AddAlternative(rule, {});
    }
    rest = rule;
  }
  const Symbol items[] = {item, Ref(rest)};
  AddBracketed(array, open, items, close);
  return array;
}

void JsonRules::AddBracketed(int32_t rule, Symbol open, std::span<const Symbol> inside,
                             Symbol close) {
  std::vector<Symbol> sequence = {open};
  AppendPadding(sequence);
  sequence.insert(sequence.end(), inside.begin(), inside.end());
  // Between empty brackets whitespace stands once.
  if (!inside.empty()) AppendPadding(sequence);
  sequence.push_back(close);
  builder_.AddAlternative(rule, sequence);
}

int32_t JsonRules::Literal(const JsonValue& value) {
  return builder_.AddLiteralRule(
      "literal", value.dump(-1, ' ', /*ensure_ascii=*/false, JsonValue::error_handler_t::replace));
}

}  // namespace kvd::structured
