#include "base/sha256.h"

#include <openssl/sha.h>

static_assert(SHA256_DIGEST_LENGTH == 32);

namespace kvd::base {

Sha256Digest Sha256(std::string_view bytes) {
  Sha256Digest digest;
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest.data());
  return digest;
}

std::string Sha256Hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  const Sha256Digest digest = Sha256(bytes);
  std::string hex;
  hex.reserve(2 * digest.size());
  for (uint8_t byte : digest) {
    hex.push_back(kHex[byte >> 4]);
    hex.push_back(kHex[byte & 0xf]);
  }
  return hex;
}

}  // namespace kvd::base
