// Python's operators on template values: arithmetic, `in`, attribute and item access,
// slicing and iteration, with jinja2's rule that failed lookups yield Undefined.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "text/internal/jinja/value.h"

namespace kvd::text::internal::jinja {

// Longest string an operator, filter or method may build.
inline constexpr size_t kMaxStringBytes = 64 << 20;

// `a op b` for op in + - * / // % **. InvalidArgument for unsupported operand types, division
// by zero, integer overflow or results longer than kMaxStringBytes.
absl::StatusOr<Value> BinaryOp(std::string_view op, const Value& a, const Value& b);
// `-a` and `+a`.
absl::StatusOr<Value> UnaryOp(std::string_view op, const Value& a);
// `item in container` for str (substring), list/tuple (element) and dict (key).
absl::StatusOr<bool> Contains(const Value& container, const Value& item);

// `object.name`: a method of str, list or dict, else a dict key or namespace attribute, else
// Undefined. Undefined `object` is an error.
absl::StatusOr<Value> GetAttribute(const Value& object, std::string_view name);
// `object[key]`: dict key, list or str index (negative from the end), else as GetAttribute
// for string keys, else Undefined.
absl::StatusOr<Value> GetItem(const Value& object, const Value& key);
// `object[start:stop:step]` on lists, tuples and strings; absent bounds are nullopt.
absl::StatusOr<Value> Slice(const Value& object, const std::optional<Value>& start,
                            const std::optional<Value>& stop, const std::optional<Value>& step);

// The items a for loop visits: list elements, dict keys, str characters; nothing for
// undefined. InvalidArgument for values that are not iterable.
absl::StatusOr<ValueList> Iterate(const Value& value);

// Python's `str % args` for the %s, %r, %d, %i, %f and %% conversions.
absl::StatusOr<Value> FormatPercent(const std::string& format, const Value& args);

}  // namespace kvd::text::internal::jinja
