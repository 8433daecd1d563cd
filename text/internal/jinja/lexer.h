// Splits a template into text and tag tokens the way jinja2's lexer does with
// trim_blocks=True and lstrip_blocks=True, including `-`/`+` whitespace control, comments and
// {% raw %} blocks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kvd::text::internal::jinja {

struct Token {
  enum class Kind {
    kText,         // Literal output; `text` holds it.
    kOutputBegin,  // {{
    kOutputEnd,    // }}
    kBlockBegin,   // {%
    kBlockEnd,     // %}
    kName,         // Identifier or keyword.
    kString,       // Quoted literal; `text` holds the unescaped value.
    kInt,
    kFloat,
    kOperator,  // Punctuation such as "(", "==", "//", "|".
    kEnd,       // End of the template.
  };
  Kind kind;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
  int column = 1;
};

// Tokenizes `source`. InvalidArgument naming line:column for an unterminated tag, comment or
// string, or a character that starts no token.
absl::StatusOr<std::vector<Token>> Tokenize(std::string_view source);

}  // namespace kvd::text::internal::jinja
