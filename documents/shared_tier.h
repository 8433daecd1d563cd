// How to reach the shared tier that `store.remote` configures: the one reading of its URL and
// credentials for every store on the tier (documents, stored responses).
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "cache_store/store/redis_pool.h"
#include "documents/documents_config.h"

namespace kvd::documents {

// The pool's settings; nullopt without a url; InvalidArgument (param store.remote.url) for a URL
// that does not parse. `user` and `password` override the URL's.
[[nodiscard]] absl::StatusOr<std::optional<cache_store::RedisPoolOptions>> SharedTierPoolOptions(
    const RemoteTierConfig& config);

// Where the tier is, for logs: "host:port" or the socket's path, never the credentials.
std::string SharedTierAddress(const cache_store::RedisEndpoint& endpoint);

}  // namespace kvd::documents
