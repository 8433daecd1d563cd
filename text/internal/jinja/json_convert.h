// Conversion between JSON documents and template values: request messages and tools in, and
// the `tojson` filter out, formatted exactly as Python's json.dumps(ensure_ascii=False).
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "text/internal/jinja/value.h"

namespace kvd::text::internal::jinja {

// Deepest nesting of lists and dicts a template value may have.
inline constexpr int kMaxValueDepth = 256;

// Objects become dicts in the document's key order, arrays lists, integers int, other numbers
// float. InvalidArgument when nested deeper than kMaxValueDepth.
absl::StatusOr<Value> FromJson(const nlohmann::ordered_json& json);
absl::StatusOr<Value> FromJson(const nlohmann::json& json);

// Options of json.dumps that templates use.
struct JsonDumpOptions {
  // Pretty-print with this indentation; compact (", " and ": " separators) when nullopt.
  std::optional<std::string> indent;
  // Between items and between a key and its value; Python's defaults follow `indent`.
  std::optional<std::string> item_separator;
  std::optional<std::string> key_separator;
  bool sort_keys = false;
};

// json.dumps(value, ensure_ascii=False, ...): None → null, tuples as arrays, floats as Python
// prints them (NaN, Infinity), non-ASCII text unescaped. InvalidArgument for undefined,
// namespaces, callables, and dict keys that are not str, int, float, bool or None.
absl::StatusOr<std::string> DumpJson(const Value& value, const JsonDumpOptions& options);

}  // namespace kvd::text::internal::jinja
