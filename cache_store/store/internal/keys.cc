#include "cache_store/store/internal/keys.h"

#include <cstdint>

namespace kvd::cache_store::internal {

std::string TenantPrefix(const std::string& tenant) {
  const uint32_t size = static_cast<uint32_t>(tenant.size());
  std::string prefix;
  prefix.reserve(4 + tenant.size());
  for (int shift = 24; shift >= 0; shift -= 8) prefix.push_back(static_cast<char>(size >> shift));
  prefix.append(tenant);
  return prefix;
}

std::string DocumentKey(const std::string& tenant, const std::string& id) {
  return TenantPrefix(tenant) + id;
}

}  // namespace kvd::cache_store::internal
