// jinja2's lexer for the HF configuration: newlines normalized, the final newline dropped
// (keep_trailing_newline=False), trim_blocks and lstrip_blocks on.
#include "text/internal/jinja/lexer.h"

#include <algorithm>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "text/internal/jinja/errors.h"
#include "text/internal/jinja/text.h"

namespace kvd::text::internal::jinja {

namespace {

bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  absl::StatusOr<std::vector<Token>> Run() {
    size_t pos = 0;
    while (pos < src_.size()) {
      size_t start = pos;
      while (true) {
        start = src_.find('{', start);
        if (start == std::string::npos || start + 1 >= src_.size()) {
          start = std::string::npos;
          break;
        }
        const char next = src_[start + 1];
        if (next == '{' || next == '%' || next == '#') break;
        ++start;
      }
      if (start == std::string::npos) {
        EmitText(src_.substr(pos), pos);
        break;
      }
      const char kind = src_[start + 1];
      const char modifier = start + 2 < src_.size() ? src_[start + 2] : '\0';
      std::string text = src_.substr(pos, start - pos);
      if (modifier == '-') {
        while (!text.empty() && IsSpace(text.back())) text.pop_back();
      } else if (kind != '{' && modifier != '+') {
        // lstrip_blocks: drop the indentation before a block or comment that starts a line.
        const size_t line_begin = text.rfind('\n') + 1;  // npos + 1 == 0.
        const bool at_line_start = line_begin > 0 || pos == 0 || src_[pos - 1] == '\n';
        if (at_line_start &&
            std::all_of(text.begin() + static_cast<ptrdiff_t>(line_begin), text.end(), IsSpace)) {
          text.resize(line_begin);
        }
      }
      EmitText(std::move(text), pos);
      // `{{+` is a unary plus, not a modifier.
      const bool has_modifier = modifier == '-' || (modifier == '+' && kind != '{');
      const size_t inner = start + 2 + (has_modifier ? 1 : 0);
      absl::StatusOr<size_t> after =
          kind == '#' ? SkipComment(start, inner)
                      : (IsRaw(kind, inner) ? LexRaw(start, inner) : LexTag(start, inner, kind));
      if (!after.ok()) return after.status();
      pos = *after;
    }
    tokens_.push_back(MakeToken(Token::Kind::kEnd, "", src_.size()));
    return std::move(tokens_);
  }

 private:
  Token MakeToken(Token::Kind kind, std::string text, size_t offset) const {
    Token token{kind, std::move(text)};
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset) - 1;
    token.line = static_cast<int>(it - line_starts_.begin()) + 1;
    token.column = static_cast<int>(offset - *it) + 1;
    return token;
  }

  absl::Status Error(size_t offset, std::string_view message) const {
    const Token at = MakeToken(Token::Kind::kEnd, "", offset);
    return absl::InvalidArgumentError(PositionedMessage(at.line, at.column, message));
  }

  void EmitText(std::string text, size_t offset) {
    if (!text.empty()) tokens_.push_back(MakeToken(Token::Kind::kText, std::move(text), offset));
  }

  // Where output resumes after a tag whose closing delimiter ends before `end`; `modifier` is
  // the character before the delimiter, `trim` whether trim_blocks applies to the tag.
  size_t AfterTag(size_t end, char modifier, bool trim) const {
    if (modifier == '-') {
      while (end < src_.size() && IsSpace(src_[end])) ++end;
    } else if (trim && modifier != '+' && end < src_.size() && src_[end] == '\n') {
      ++end;
    }
    return end;
  }

  absl::StatusOr<size_t> SkipComment(size_t start, size_t inner) {
    const size_t close = src_.find("#}", inner);
    if (close == std::string::npos) return Error(start, "unterminated comment");
    const char modifier = close > inner ? src_[close - 1] : '\0';
    return AfterTag(close + 2, modifier, /*trim=*/true);
  }

  // Whether the block tag whose content starts at `inner` is `{% raw %}`.
  bool IsRaw(char kind, size_t inner) const {
    if (kind != '%') return false;
    size_t p = inner;
    while (p < src_.size() && IsSpace(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0 || (p + 3 < src_.size() && IsNameChar(src_[p + 3]))) {
      return false;
    }
    return true;
  }

  // Finds the `%}` closing a statement tag made of `keyword` only, starting at `p`.
  size_t CloseOfKeywordTag(size_t p, std::string_view keyword) const {
    while (p < src_.size() && IsSpace(src_[p])) ++p;
    if (src_.compare(p, keyword.size(), keyword) != 0) return std::string::npos;
    p += keyword.size();
    while (p < src_.size() && IsSpace(src_[p])) ++p;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    return src_.compare(p, 2, "%}") == 0 ? p : std::string::npos;
  }

  absl::StatusOr<size_t> LexRaw(size_t start, size_t inner) {
    const size_t open_close = CloseOfKeywordTag(inner, "raw");
    if (open_close == std::string::npos) return Error(start, "malformed raw tag");
    const size_t body = AfterTag(open_close + 2, src_[open_close - 1], /*trim=*/false);
    for (size_t p = src_.find("{%", body); p != std::string::npos; p = src_.find("{%", p + 2)) {
      const char modifier = p + 2 < src_.size() ? src_[p + 2] : '\0';
      const size_t content = p + 2 + (modifier == '-' || modifier == '+' ? 1 : 0);
      const size_t close = CloseOfKeywordTag(content, "endraw");
      if (close == std::string::npos) continue;
      std::string text = src_.substr(body, p - body);
      if (modifier == '-') {
        while (!text.empty() && IsSpace(text.back())) text.pop_back();
      }
      EmitText(std::move(text), body);
      return AfterTag(close + 2, src_[close - 1], /*trim=*/true);
    }
    return Error(start, "missing {% endraw %}");
  }

  absl::StatusOr<size_t> LexTag(size_t start, size_t inner, char kind) {
    const bool block = kind == '%';
    tokens_.push_back(
        MakeToken(block ? Token::Kind::kBlockBegin : Token::Kind::kOutputBegin, "", start));
    const char closer = block ? '%' : '}';
    int depth = 0;
    size_t p = inner;
    while (true) {
      while (p < src_.size() && IsSpace(src_[p])) ++p;
      if (p >= src_.size()) {
        return Error(start, block ? "unterminated '{%' tag" : "unterminated '{{' expression");
      }
      const char c = src_[p];
      if (depth == 0) {
        size_t close = p;
        if ((c == '-' || c == '+') && p + 1 < src_.size()) ++close;
        if (src_[close] == closer && close + 1 < src_.size() && src_[close + 1] == '}' &&
            (close == p || c == '-' || (block && c == '+'))) {
          tokens_.push_back(
              MakeToken(block ? Token::Kind::kBlockEnd : Token::Kind::kOutputEnd, "", p));
          return AfterTag(close + 2, close == p ? '\0' : c, /*trim=*/block);
        }
      }
      if (IsNameStart(c)) {
        size_t end = p;
        while (end < src_.size() && IsNameChar(src_[end])) ++end;
        tokens_.push_back(MakeToken(Token::Kind::kName, src_.substr(p, end - p), p));
        p = end;
      } else if (IsDigit(c)) {
        p = LexNumber(p);
      } else if (c == '\'' || c == '"') {
        absl::StatusOr<size_t> end = LexString(p);
        if (!end.ok()) return end.status();
        p = *end;
      } else {
        static constexpr std::string_view kTwoChar[] = {"**", "//", "==", "!=", "<=", ">="};
        size_t len = 0;
        for (std::string_view op : kTwoChar) {
          if (src_.compare(p, 2, op) == 0) len = 2;
        }
        if (len == 0) {
          if (std::string_view("+-*/%~<>()[]{}.,:|=").find(c) == std::string_view::npos) {
            return Error(p, absl::StrCat("unexpected character '", std::string(1, c), "'"));
          }
          len = 1;
          // Only braces can hide a closing `}}`: `{{ {'a': {'b': 1}} }}`.
          if (c == '{') ++depth;
          if (c == '}' && depth > 0) --depth;
        }
        tokens_.push_back(MakeToken(Token::Kind::kOperator, src_.substr(p, len), p));
        p += len;
      }
    }
  }

  // Digits, with `_` separators as Python allows; a float needs digits after the point or an
  // exponent. Right after a `.` only an integer is read, so `a.0.1` is two subscripts.
  size_t LexNumber(size_t p) {
    const size_t start = p;
    auto digits = [&](size_t q) {
      while (q < src_.size() && (IsDigit(src_[q]) ||
                                 (src_[q] == '_' && q + 1 < src_.size() && IsDigit(src_[q + 1])))) {
        ++q;
      }
      return q;
    };
    p = digits(p);
    bool is_float = false;
    const bool after_dot = !tokens_.empty() && tokens_.back().kind == Token::Kind::kOperator &&
                           tokens_.back().text == ".";
    if (!after_dot && p + 1 < src_.size() && src_[p] == '.' && IsDigit(src_[p + 1])) {
      p = digits(p + 1);
      is_float = true;
    }
    if (!after_dot && p < src_.size() && (src_[p] == 'e' || src_[p] == 'E')) {
      size_t q = p + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && IsDigit(src_[q])) {
        p = digits(q);
        is_float = true;
      }
    }
    std::string text;
    for (size_t i = start; i < p; ++i) {
      if (src_[i] != '_') text += src_[i];
    }
    Token token = MakeToken(is_float ? Token::Kind::kFloat : Token::Kind::kInt, text, start);
    if (is_float) {
      token.float_value = std::strtod(text.c_str(), nullptr);
    } else {
      // Saturates instead of overflowing; a template has no business with such numbers.
      token.int_value = static_cast<int64_t>(std::min<unsigned long long>(
          std::strtoull(text.c_str(), nullptr, 10), static_cast<unsigned long long>(INT64_MAX)));
    }
    tokens_.push_back(std::move(token));
    return p;
  }

  absl::StatusOr<size_t> LexString(size_t start) {
    const char quote = src_[start];
    std::string value;
    size_t p = start + 1;
    while (p < src_.size() && src_[p] != quote) {
      if (src_[p] != '\\' || p + 1 >= src_.size()) {
        value += src_[p++];
        continue;
      }
      const char e = src_[p + 1];
      p += 2;
      switch (e) {
        case 'n':
          value += '\n';
          break;
        case 't':
          value += '\t';
          break;
        case 'r':
          value += '\r';
          break;
        case 'b':
          value += '\b';
          break;
        case 'f':
          value += '\f';
          break;
        case 'v':
          value += '\v';
          break;
        case 'a':
          value += '\a';
          break;
        case '0':
          value += '\0';
          break;
        case '\\':
          value += '\\';
          break;
        case '\'':
          value += '\'';
          break;
        case '"':
          value += '"';
          break;
        case '\n':
          break;
        case 'x':
        case 'u':
        case 'U': {
          const size_t n = e == 'x' ? 2 : (e == 'u' ? 4 : 8);
          const std::string hex = src_.substr(p, n);
          if (hex.size() != n || !std::all_of(hex.begin(), hex.end(), [](char h) {
                return std::isxdigit(static_cast<unsigned char>(h));
              })) {
            return Error(p - 2, "malformed escape sequence in string");
          }
          const unsigned long cp = std::strtoul(hex.c_str(), nullptr, 16);
          if (cp > 0x10FFFF) return Error(p - 2, "escape sequence out of range");
          AppendUtf8(static_cast<uint32_t>(cp), &value);
          p += n;
          break;
        }
        default:
          // Python keeps unknown escapes as written.
          value += '\\';
          value += e;
      }
    }
    if (p >= src_.size()) return Error(start, "unterminated string");
    tokens_.push_back(MakeToken(Token::Kind::kString, std::move(value), start));
    return p + 1;
  }

  std::string src_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
};

}  // namespace

absl::StatusOr<std::vector<Token>> Tokenize(std::string_view source) {
  std::string normalized;
  normalized.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      normalized += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      normalized += source[i];
    }
  }
  if (!normalized.empty() && normalized.back() == '\n') normalized.pop_back();
  return Lexer(std::move(normalized)).Run();
}

}  // namespace kvd::text::internal::jinja
