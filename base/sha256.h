// SHA-256 through OpenSSL: API key digests, payload checksums and cache fingerprints.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kvd::base {

using Sha256Digest = std::array<uint8_t, 32>;

Sha256Digest Sha256(std::string_view bytes);
// The digest as 64 lowercase hex digits.
std::string Sha256Hex(std::string_view bytes);

}  // namespace kvd::base
