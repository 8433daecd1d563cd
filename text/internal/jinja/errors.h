// How template errors carry their source position: the innermost failing expression or
// statement prefixes "line:column: " once; raise_exception messages pass through verbatim.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace kvd::text::internal::jinja {

// "line:column: message".
std::string PositionedMessage(int line, int column, std::string_view message);

// InvalidArgument carrying `message` unchanged, already final: AddPosition leaves it alone.
absl::Status RaisedError(std::string_view message);

// `status` with "line:column: " in front of its message, unless it is OK or already final.
absl::Status AddPosition(int line, int column, absl::Status status);

}  // namespace kvd::text::internal::jinja
