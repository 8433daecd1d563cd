// SHA-256 through OpenSSL, for payload checksums and identity fingerprints.
#pragma once

#include <openssl/sha.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kvd::cache_store::internal {

using Sha256Digest = std::array<uint8_t, SHA256_DIGEST_LENGTH>;

inline Sha256Digest Sha256(std::string_view bytes) {
  Sha256Digest digest;
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest.data());
  return digest;
}

inline std::string HexSha256(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  Sha256Digest digest = Sha256(bytes);
  std::string hex;
  hex.reserve(digest.size() * 2);
  for (uint8_t byte : digest) {
    hex.push_back(kHex[byte >> 4]);
    hex.push_back(kHex[byte & 0xf]);
  }
  return hex;
}

}  // namespace kvd::cache_store::internal
