// RocksDB keys of the document store: the same key in both column families, a tenant prefix
// (4-byte big-endian tenant length, then the tenant) followed by the document id. The length
// makes no tenant's prefix a prefix of another's, so no scan or lookup crosses tenants, and a
// tenant's keys sort by id.
#pragma once

#include <string>

namespace kvd::cache_store::internal {

inline constexpr char kMetaFamily[] = "meta";
inline constexpr char kKvFamily[] = "kv";

std::string TenantPrefix(const std::string& tenant);
std::string DocumentKey(const std::string& tenant, const std::string& id);

}  // namespace kvd::cache_store::internal
