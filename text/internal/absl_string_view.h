// std::string_view as Abseil's: Debian's Abseil has its own string_view, and its hash maps look
// std::string keys up by that one.
#pragma once

#include <string_view>

#include "absl/strings/string_view.h"

namespace kvd::text::internal {

inline absl::string_view AsAbsl(std::string_view s) { return {s.data(), s.size()}; }

}  // namespace kvd::text::internal
