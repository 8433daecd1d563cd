// jinja2's built-in filters that chat templates use (`value | name(args)`), with HF's
// `tojson` in place of jinja2's HTML-safe one.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "text/internal/jinja/value.h"

namespace kvd::text::internal::jinja {

using FilterFunction = absl::StatusOr<Value> (*)(const Value& input, CallArgs& args);

// The filter called `name`, or nullptr when there is none.
FilterFunction FindFilter(std::string_view name);

}  // namespace kvd::text::internal::jinja
