#include "structured/regex_grammar.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "structured/codepoint_set.h"

namespace kvd::structured {
namespace {

// Deepest group nesting, and the largest bound of a counted quantifier.
constexpr int kMaxGroupDepth = 64;
constexpr int kMaxRepeat = 1000;

struct Node {
  enum class Kind { kEmpty, kChars, kConcat, kAlternation, kRepeat };
  Kind kind = Kind::kEmpty;
  CodepointSet chars;
  std::vector<Node> children;
  int min = 0;
  int max = 0;  // -1: unbounded
};

CodepointSet Digits() { return CodepointSet::Range('0', '9'); }
CodepointSet WordChars() {
  CodepointSet set = CodepointSet::Range('a', 'z');
  set.Add('A', 'Z');
  set.Add('0', '9');
  set.Add('_', '_');
  return set;
}
// ECMAScript's \s: WhiteSpace and LineTerminator.
CodepointSet SpaceChars() {
  CodepointSet set = CodepointSet::Range('\t', '\r');
  for (uint32_t c : {0x20u, 0xA0u, 0x1680u, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u,
                     0xFEFFu}) {
    set.Add(c, c);
  }
  set.Add(0x2000, 0x200A);
  return set;
}

class RegexParser {
 public:
  RegexParser(std::string_view pattern, bool ignore_case)
      : pattern_(pattern), ignore_case_(ignore_case) {}

  absl::StatusOr<Node> Parse(bool& anchored_start, bool& anchored_end) {
    KVD_RETURN_IF_ERROR(Decode());
    anchored_start = !text_.empty() && text_.front() == '^';
    if (anchored_start) ++at_;
    size_t end = text_.size();
    anchored_end = end > at_ && text_.back() == '$' && !EscapedAt(end - 1);
    if (anchored_end) text_.pop_back();
    KVD_ASSIGN_OR_RETURN(Node node, ParseAlternation(0));
    if (at_ != text_.size()) return Error(text_[at_] == ')' ? "an unmatched ')'" : "text");
    return node;
  }

 private:
  absl::Status Decode() {
    for (size_t i = 0; i < pattern_.size();) {
      const auto byte = static_cast<uint8_t>(pattern_[i]);
      const int length = byte < 0x80 ? 1 : byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 0;
      if (length == 0 || i + length > pattern_.size()) {
        return absl::InvalidArgumentError("the regular expression is not valid UTF-8");
      }
      uint32_t codepoint = length == 1 ? byte : byte & (0x7F >> length);
      for (int k = 1; k < length; ++k) {
        const auto next = static_cast<uint8_t>(pattern_[i + k]);
        if ((next & 0xC0) != 0x80) {
          return absl::InvalidArgumentError("the regular expression is not valid UTF-8");
        }
        codepoint = (codepoint << 6) | (next & 0x3F);
      }
      text_.push_back(codepoint);
      i += length;
    }
    return absl::OkStatus();
  }

  // Whether the character at `index` is escaped by an odd run of backslashes before it.
  bool EscapedAt(size_t index) const {
    size_t slashes = 0;
    while (index > slashes && text_[index - slashes - 1] == '\\') ++slashes;
    return slashes % 2 == 1;
  }

  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(
        "regular expression: unsupported or invalid ", std::string(what), " at character ", at_));
  }

  bool AtEnd() const { return at_ >= text_.size(); }
  uint32_t Peek() const { return text_[at_]; }

  absl::StatusOr<Node> ParseAlternation(int depth) {
    if (depth > kMaxGroupDepth) return Error("nesting (too deep)");
    Node alternation{.kind = Node::Kind::kAlternation};
    while (true) {
      KVD_ASSIGN_OR_RETURN(Node branch, ParseConcat(depth));
      alternation.children.push_back(std::move(branch));
      if (AtEnd() || Peek() != '|') break;
      ++at_;
    }
    if (alternation.children.size() == 1) return std::move(alternation.children[0]);
    return alternation;
  }

  absl::StatusOr<Node> ParseConcat(int depth) {
    Node concat{.kind = Node::Kind::kConcat};
    while (!AtEnd() && Peek() != '|' && Peek() != ')') {
      KVD_ASSIGN_OR_RETURN(Node atom, ParseAtom(depth));
      KVD_ASSIGN_OR_RETURN(atom, ParseQuantifier(std::move(atom)));
      concat.children.push_back(std::move(atom));
    }
    if (concat.children.size() == 1) return std::move(concat.children[0]);
    return concat;
  }

  // At most one quantifier (and its lazy mark) per atom: a second is an error, as in
  // ECMAScript, so quantifiers never nest deeper than groups do.
  absl::StatusOr<Node> ParseQuantifier(Node atom) {
    if (AtEnd()) return atom;
    int min = 0;
    int max = 0;
    const uint32_t c = Peek();
    if (c == '*') {
      min = 0, max = -1;
      ++at_;
    } else if (c == '+') {
      min = 1, max = -1;
      ++at_;
    } else if (c == '?') {
      min = 0, max = 1;
      ++at_;
    } else if (c == '{') {
      const size_t start = at_;
      ++at_;
      std::optional<int> low = ParseNumber();
      if (!low.has_value()) {
        at_ = start;  // a literal '{', as ECMAScript's Annex B reads it
        return atom;
      }
      min = max = *low;
      if (!AtEnd() && Peek() == ',') {
        ++at_;
        const std::optional<int> high = ParseNumber();
        max = high.value_or(-1);
      }
      if (AtEnd() || Peek() != '}') {
        at_ = start;
        return atom;
      }
      ++at_;
      if (min > kMaxRepeat || max > kMaxRepeat) return Error("repetition count (over 1000)");
      if (max >= 0 && max < min) return Error("repetition range");
    } else {
      return atom;
    }
    if (!AtEnd() && Peek() == '?') ++at_;  // lazy: the same language
    if (!AtEnd() && (Peek() == '*' || Peek() == '+' || Peek() == '?')) {
      return Error("quantifier (nothing to repeat)");
    }
    // A repeat of x*, x+ or x? is one repeat of x: (x*){n,m} is x*, (x+){n,m} is x{n,}, (x?){n,m}
    // is x{0,m}. Nested, they would let the matcher follow exponentially many parses of the
    // same text.
    const bool star = atom.kind == Node::Kind::kRepeat && atom.min == 0 && atom.max < 0;
    const bool plus = atom.kind == Node::Kind::kRepeat && atom.min == 1 && atom.max < 0;
    const bool optional = atom.kind == Node::Kind::kRepeat && atom.min == 0 && atom.max == 1;
    if (star || plus || optional) {
      atom.min = plus ? min : 0;
      atom.max = star || plus || max < 0 ? -1 : max;
      return atom;
    }
    Node repeat{.kind = Node::Kind::kRepeat, .min = min, .max = max};
    repeat.children.push_back(std::move(atom));
    return repeat;
  }

  std::optional<int> ParseNumber() {
    int value = 0;
    bool any = false;
    while (!AtEnd() && Peek() >= '0' && Peek() <= '9') {
      value = std::min(value * 10 + static_cast<int>(Peek() - '0'), kMaxRepeat + 1);
      any = true;
      ++at_;
    }
    if (!any) return std::nullopt;
    return value;
  }

  Node Chars(CodepointSet set) const {
    return Node{.kind = Node::Kind::kChars,
                .chars = ignore_case_ ? set.WithAsciiCases() : std::move(set)};
  }

  absl::StatusOr<Node> ParseAtom(int depth) {
    const uint32_t c = Peek();
    switch (c) {
      case '(': {
        ++at_;
        if (!AtEnd() && Peek() == '?') {
          ++at_;
          if (!AtEnd() && Peek() == ':') {
            ++at_;
          } else if (!AtEnd() && Peek() == '<' && at_ + 1 < text_.size() &&
                     text_[at_ + 1] != '=' && text_[at_ + 1] != '!') {
            while (!AtEnd() && Peek() != '>') ++at_;
            if (AtEnd()) return Error("group name");
            ++at_;
          } else {
            return Error("group (lookaround)");
          }
        }
        KVD_ASSIGN_OR_RETURN(Node inner, ParseAlternation(depth + 1));
        if (AtEnd() || Peek() != ')') return Error("group (no closing ')')");
        ++at_;
        return inner;
      }
      case '[': {
        KVD_ASSIGN_OR_RETURN(CodepointSet set, ParseClass());
        return Node{.kind = Node::Kind::kChars, .chars = std::move(set)};
      }
      case '.': {
        ++at_;
        CodepointSet line_ends = CodepointSet::Of('\n');
        line_ends.Add('\r', '\r');
        line_ends.Add(0x2028, 0x2029);
        return Chars(line_ends.Complement());
      }
      case '\\': {
        KVD_ASSIGN_OR_RETURN(CodepointSet set, ParseEscape(/*in_class=*/false));
        return Chars(std::move(set));
      }
      case '^':
      case '$':
        return Error("anchor (only at the very start or end)");
      case '*':
      case '+':
      case '?':
        return Error("quantifier (nothing to repeat)");
      default:
        ++at_;
        return Chars(CodepointSet::Of(c));
    }
  }

  absl::StatusOr<CodepointSet> ParseClass() {
    ++at_;  // '['
    bool negated = false;
    if (!AtEnd() && Peek() == '^') {
      negated = true;
      ++at_;
    }
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    CodepointSet set;
    while (true) {
      if (AtEnd()) return Error("class (no closing ']')");
      if (Peek() == ']') {
        ++at_;
        break;
      }
      KVD_ASSIGN_OR_RETURN(CodepointSet first, ClassAtom());
      const bool single = first.ranges().size() == 1 &&
                          first.ranges()[0].first == first.ranges()[0].second;
      if (single && at_ + 1 < text_.size() && Peek() == '-' && text_[at_ + 1] != ']') {
        ++at_;
        KVD_ASSIGN_OR_RETURN(CodepointSet last, ClassAtom());
        const bool single_last = last.ranges().size() == 1 &&
                                 last.ranges()[0].first == last.ranges()[0].second;
        if (!single_last || last.ranges()[0].first < first.ranges()[0].first) {
          return Error("class range");
        }
        ranges.emplace_back(first.ranges()[0].first, last.ranges()[0].first);
      } else if (single) {
        ranges.push_back(first.ranges()[0]);
      } else {
        set.AddAll(first);  // an escape class (\d, \w...): a few ranges
      }
    }
    set.AddAll(CodepointSet::FromRanges(std::move(ranges)));
    if (ignore_case_) set = set.WithAsciiCases();
    if (negated) set = set.Complement();
    return set;
  }

  absl::StatusOr<CodepointSet> ClassAtom() {
    if (Peek() == '\\') return ParseEscape(/*in_class=*/true);
    return CodepointSet::Of(text_[at_++]);
  }

  absl::StatusOr<CodepointSet> ParseEscape(bool in_class) {
    ++at_;  // '\'
    if (AtEnd()) return Error("escape (pattern ends with '\\')");
    const uint32_t c = text_[at_++];
    switch (c) {
      case 'd': return Digits();
      case 'D': return Digits().Complement();
      case 'w': return WordChars();
      case 'W': return WordChars().Complement();
      case 's': return SpaceChars();
      case 'S': return SpaceChars().Complement();
      case 'n': return CodepointSet::Of('\n');
      case 'r': return CodepointSet::Of('\r');
      case 't': return CodepointSet::Of('\t');
      case 'f': return CodepointSet::Of('\f');
      case 'v': return CodepointSet::Of('\v');
      case '0': return CodepointSet::Of(0);
      case 'b':
        if (in_class) return CodepointSet::Of('\b');
        return Error("escape \\b (word boundary)");
      case 'x': return ParseHex(2);
      case 'u':
        if (!AtEnd() && Peek() == '{') {
          ++at_;
          uint32_t value = 0;
          int digits = 0;
          while (!AtEnd() && Peek() != '}' && digits < 7) {
            const int digit = HexValue(Peek());
            if (digit < 0) return Error("escape \\u{...}");
            value = value * 16 + static_cast<uint32_t>(digit);
            ++digits;
            ++at_;
          }
          if (AtEnd() || Peek() != '}' || digits == 0 || value > kMaxCodepoint) {
            return Error("escape \\u{...}");
          }
          ++at_;
          return CodepointSet::Of(value);
        }
        return ParseHex(4);
      default:
        if (c < 0x80 && !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                          (c >= '0' && c <= '9'))) {
          return CodepointSet::Of(c);  // escaped punctuation
        }
        --at_;
        return Error(absl::StrCat("escape \\", std::string(1, static_cast<char>(c))));
    }
  }

  static int HexValue(uint32_t c) {
    if (c >= '0' && c <= '9') return static_cast<int>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<int>(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return static_cast<int>(c - 'A' + 10);
    return -1;
  }

  absl::StatusOr<CodepointSet> ParseHex(int digits) {
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      if (AtEnd() || HexValue(Peek()) < 0) return Error("hexadecimal escape");
      value = value * 16 + static_cast<uint32_t>(HexValue(Peek()));
      ++at_;
    }
    if (value >= 0xD800 && value <= 0xDFFF) return Error("escape (a lone surrogate)");
    return CodepointSet::Of(value);
  }

  std::string_view pattern_;
  bool ignore_case_;
  std::vector<uint32_t> text_;
  size_t at_ = 0;
};

class RegexEmitter {
 public:
  RegexEmitter(GrammarBuilder& builder, bool inside_json_string)
      : builder_(builder), inside_json_string_(inside_json_string) {}

  absl::Status Emit(const Node& node, std::vector<Symbol>& out) {
    if (builder_.symbol_count() + out.size() > GrammarBuilder::kMaxSymbols) {
      return absl::InvalidArgumentError("the regular expression's grammar is too large");
    }
    switch (node.kind) {
      case Node::Kind::kEmpty:
        return absl::OkStatus();
      case Node::Kind::kChars:
        if (node.chars.empty()) {
          return absl::InvalidArgumentError("regular expression: a class that matches nothing");
        }
        out.push_back(CharSymbol(node.chars));
        return absl::OkStatus();
      case Node::Kind::kConcat:
        for (const Node& child : node.children) KVD_RETURN_IF_ERROR(Emit(child, out));
        return absl::OkStatus();
      case Node::Kind::kAlternation: {
        const int32_t rule = builder_.AddRule("regex_alternation");
        for (const Node& child : node.children) {
          std::vector<Symbol> branch;
          KVD_RETURN_IF_ERROR(Emit(child, branch));
          builder_.AddAlternative(rule, branch);
        }
        out.push_back(Symbol::Rule(rule));
        return absl::OkStatus();
      }
      case Node::Kind::kRepeat:
        return EmitRepeat(node, out);
    }
    return absl::OkStatus();
  }

  Symbol CharSymbol(const CodepointSet& set) {
    return inside_json_string_ ? JsonStringCharSymbol(builder_, set)
                               : Utf8CharSymbol(builder_, set);
  }

  // Any number of characters of `set`.
  Symbol Star(const CodepointSet& set) {
    const Symbol item = CharSymbol(set);
    const int32_t rule = builder_.AddRule("regex_star");
    const Symbol loop[] = {item, Symbol::Rule(rule)};
    builder_.AddAlternative(rule, loop);
    builder_.AddAlternative(rule, {});
    return Symbol::Rule(rule);
  }

 private:
  absl::Status EmitRepeat(const Node& node, std::vector<Symbol>& out) {
    std::vector<Symbol> body;
    KVD_RETURN_IF_ERROR(Emit(node.children[0], body));
    if (body.empty()) return absl::OkStatus();
    Symbol item = body[0];
    if (body.size() > 1) {
      const int32_t rule = builder_.AddRule("regex_group");
      builder_.AddAlternative(rule, body);
      item = Symbol::Rule(rule);
    }
    if (builder_.symbol_count() + out.size() + node.min > GrammarBuilder::kMaxSymbols) {
      return absl::InvalidArgumentError("the regular expression's grammar is too large");
    }
    for (int i = 0; i < node.min; ++i) out.push_back(item);
    if (node.max < 0) {
      const int32_t rule = builder_.AddRule("regex_repeat");
      const Symbol loop[] = {item, Symbol::Rule(rule)};
      builder_.AddAlternative(rule, loop);
      builder_.AddAlternative(rule, {});
      out.push_back(Symbol::Rule(rule));
    } else if (node.max > node.min) {
      // optional_k ::= item optional_{k+1} | "" for the max - min optional copies.
      int32_t next = -1;
      for (int k = node.max - node.min; k > 0; --k) {
        const int32_t rule = builder_.AddRule("regex_optional");
        std::vector<Symbol> sequence = {item};
        if (next >= 0) sequence.push_back(Symbol::Rule(next));
        builder_.AddAlternative(rule, sequence);
        builder_.AddAlternative(rule, {});
        next = rule;
      }
      out.push_back(Symbol::Rule(next));
    }
    return absl::OkStatus();
  }

  GrammarBuilder& builder_;
  bool inside_json_string_;
};

}  // namespace

absl::StatusOr<int32_t> AddRegexRule(GrammarBuilder& builder, std::string_view pattern,
                                     const RegexOptions& options) {
  RegexParser parser(pattern, options.ignore_ascii_case);
  bool anchored_start = false;
  bool anchored_end = false;
  KVD_ASSIGN_OR_RETURN(const Node node, parser.Parse(anchored_start, anchored_end));
  RegexEmitter emitter(builder, options.inside_json_string);
  std::vector<Symbol> sequence;
  if (options.search && !anchored_start) sequence.push_back(emitter.Star(CodepointSet::All()));
  KVD_RETURN_IF_ERROR(emitter.Emit(node, sequence));
  if (options.search && !anchored_end) sequence.push_back(emitter.Star(CodepointSet::All()));
  const int32_t rule = builder.AddRule("regex");
  builder.AddAlternative(rule, sequence);
  return rule;
}

}  // namespace kvd::structured
