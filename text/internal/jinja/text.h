// Python str operations on UTF-8 text for the chat-template interpreter: code-point indexing,
// strip, split, replace, case changes. Case changes and whitespace follow ASCII only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvd::text::internal::jinja {

// The text split into its characters (one view per code point; invalid bytes stand alone).
std::vector<std::string_view> CodePoints(std::string_view text);
size_t CodePointCount(std::string_view text);

// Python's str.isspace() for one ASCII byte.
bool IsSpace(char c);

// str.strip/lstrip/rstrip: removes leading and/or trailing characters found in `chars`, or
// whitespace when `chars` is nullopt.
std::string Strip(std::string_view text, const std::optional<std::string>& chars, bool left,
                  bool right);

// str.split: by `sep`, or on runs of whitespace (dropping empty parts) when nullopt. At most
// `max_split` splits when it is >= 0.
std::vector<std::string> Split(std::string_view text, const std::optional<std::string>& sep,
                               int64_t max_split);

// str.replace: the first `count` occurrences (all when count < 0); an empty `old` inserts
// `replacement` around every character, as Python does.
std::string Replace(std::string_view text, std::string_view old, std::string_view replacement,
                    int64_t count);

// str.count: non-overlapping occurrences (characters + 1 for an empty needle).
int64_t CountOccurrences(std::string_view text, std::string_view needle);

std::string ToUpper(std::string_view text);
std::string ToLower(std::string_view text);
// str.capitalize: the first character upper case, the rest lower case.
std::string Capitalize(std::string_view text);
// str.title: upper case after every non-letter, lower case elsewhere.
std::string TitleCase(std::string_view text);
// jinja2's `title` filter: words start after whitespace or one of "-({[<".
std::string TitleFilter(std::string_view text);

}  // namespace kvd::text::internal::jinja
