// The comparison that checks a presented API key (the config stores SHA-256 digests,
// base/sha256.h) without leaking where it differs.
#pragma once

#include <string_view>

namespace kvd::server {

// Whether a and b are equal, in time that depends on their lengths only, not on their content
// or on where they first differ.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace kvd::server
