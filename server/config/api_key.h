// API keys as the config stores them (SHA-256 digests, so the file holds no secrets) and the
// comparison that checks a presented key without leaking where it differs.
#pragma once

#include <string>
#include <string_view>

namespace kvd::server {

// SHA-256 of `data` as 64 lower-case hex digits.
std::string Sha256Hex(std::string_view data);

// Whether a and b are equal, in time that depends on their lengths only, not on their content
// or on where they first differ.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace kvd::server
