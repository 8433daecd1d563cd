// The parameters of a URL query string ("limit=20&after=doc-x"), percent-decoded.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kvd::server {

// Names to values; "+" reads as a space. InvalidArgument for a malformed percent escape or a
// name given twice.
[[nodiscard]] absl::StatusOr<std::map<std::string, std::string>> ParseQueryString(
    std::string_view query);

}  // namespace kvd::server
