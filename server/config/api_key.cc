#include "server/config/api_key.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>

namespace kvd::server {

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(), nullptr) != 1 ||
      size != 32) {
    // Only a broken OpenSSL installation gets here; no key could be checked at all.
    std::fputs("kvd: OpenSSL could not compute SHA-256\n", stderr);
    std::abort();
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex(2 * size, '\0');
  for (unsigned int i = 0; i < size; ++i) {
    hex[2 * i] = kHex[digest[i] >> 4];
    hex[2 * i + 1] = kHex[digest[i] & 0xf];
  }
  return hex;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    // Still touch every byte of `a`, so that a wrong length costs what a wrong byte costs.
    volatile int sink = CRYPTO_memcmp(a.data(), a.data(), a.size());
    (void)sink;
    return false;
  }
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace kvd::server
