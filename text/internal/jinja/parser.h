// Parses chat-template source into a syntax tree, resolving filters and tests by name so an
// unknown one is an error when the template loads rather than when it first renders.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "text/internal/jinja/ast.h"

namespace kvd::text::internal::jinja {

// InvalidArgument "line:column: message" for syntax errors, unknown filters or tests,
// unsupported statements and nesting deeper than the interpreter allows.
absl::StatusOr<StmtList> ParseTemplate(std::string_view source);

}  // namespace kvd::text::internal::jinja
