// jinja2's built-in tests (`value is name(args)`): defined, none, string, mapping, eq...
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "text/internal/jinja/value.h"

namespace kvd::text::internal::jinja {

using TestFunction = absl::StatusOr<bool> (*)(const Value& value, CallArgs& args);

// The test called `name`, or nullptr when there is none.
TestFunction FindTest(std::string_view name);

}  // namespace kvd::text::internal::jinja
