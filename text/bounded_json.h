// JSON text to a value with a nesting limit applied while parsing: nothing deeper than the limit
// is ever built, so no later recursive copy, dump or render of the value can exhaust the stack.
// Every parse of bytes from a client, a file or a peer goes through here.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace kvd::text {

// Deepest nesting of arrays and objects accepted from outside: far beyond any real request,
// config or tokenizer file, and far below what a recursive walk of the value can survive.
inline constexpr int kMaxJsonDepth = 128;

// `what` names the text in errors ("the request body", "config.json").
template <typename Json = nlohmann::json>
[[nodiscard]] absl::StatusOr<Json> ParseBoundedJson(std::string_view text, std::string_view what,
                                                    int max_depth = kMaxJsonDepth) {
  bool too_deep = false;
  // The parser is iterative; a value nested too deep is discarded as it opens, so only its
  // shallow part is ever built.
  const typename Json::parser_callback_t keep_shallow =
      [&too_deep, max_depth](int depth, typename Json::parse_event_t event, Json&) {
        const bool opens =
            event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start;
        if (opens && depth >= max_depth) too_deep = true;
        return !too_deep;
      };
  Json parsed;
  std::string syntax_error;
  try {
    parsed = Json::parse(text, keep_shallow);
  } catch (const typename Json::exception& e) {
    syntax_error = e.what();
  }
  if (too_deep) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(what), " nests arrays and objects deeper than ", max_depth, " levels"));
  }
  if (!syntax_error.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), " is not valid JSON: ", syntax_error));
  }
  return parsed;
}

}  // namespace kvd::text
