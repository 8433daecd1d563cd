#include "server/config/api_key.h"

#include <openssl/crypto.h>

namespace kvd::server {

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
