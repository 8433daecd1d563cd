#include "documents/shared_tier.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/status_details.h"

namespace kvd::documents {

absl::StatusOr<std::optional<cache_store::RedisPoolOptions>> SharedTierPoolOptions(
    const RemoteTierConfig& config) {
  if (config.url.empty()) return std::nullopt;
  absl::StatusOr<cache_store::RedisEndpoint> endpoint = cache_store::ParseRedisUrl(config.url);
  if (!endpoint.ok()) return WithParam(endpoint.status(), "store.remote.url");
  if (!config.user.empty()) endpoint->user = config.user;
  if (!config.password.empty()) endpoint->password = config.password;
  return cache_store::RedisPoolOptions{.endpoint = *std::move(endpoint),
                                       .timeout = absl::Seconds(config.timeout_seconds)};
}

std::string SharedTierAddress(const cache_store::RedisEndpoint& endpoint) {
  return endpoint.unix_path.empty() ? absl::StrCat(endpoint.host, ":", endpoint.port)
                                    : endpoint.unix_path;
}

}  // namespace kvd::documents
