// Regular expressions (an ECMAScript subset) as grammar rules: the `regex` constraint, JSON
// Schema's `pattern`, and the string formats kvd supports exactly.
//
// Supported: literals (UTF-8), `.`, classes `[...]` / `[^...]` with ranges, \d \D \w \W \s \S,
// escapes \n \r \t \f \v \0 \xHH \uHHHH \u{H...} and escaped punctuation, groups `(...)`,
// `(?:...)`, `(?<name>...)`, alternation, quantifiers * + ? {n} {n,} {n,m} (lazy forms too: the
// language is the same), and ^ / $ at the very start / end. Anything else (lookaround,
// backreferences, \b, flags) is InvalidArgument naming it.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "structured/grammar.h"

namespace kvd::structured {

struct RegexOptions {
  // Characters are matched as JSON writes them inside a string (`"` as \", controls escaped).
  bool inside_json_string = false;
  // Unanchored sides match any text there, as a JSON Schema `pattern` searches; a whole-text
  // match otherwise.
  bool search = false;
  // ASCII letters match either case.
  bool ignore_ascii_case = false;
};

// Adds a rule matching exactly the texts `pattern` accepts; returns its id.
[[nodiscard]] absl::StatusOr<int32_t> AddRegexRule(GrammarBuilder& builder,
                                                   std::string_view pattern,
                                                   const RegexOptions& options = {});

}  // namespace kvd::structured
