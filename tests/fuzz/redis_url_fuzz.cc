// Fuzzes cache_store::ParseRedisUrl (store.remote.url); any endpoint it gives, written back as a
// URL with its user and password percent-encoded, must parse back to itself.
#include <cctype>
#include <cstdio>
#include <string>

#include "cache_store/store/redis_connection.h"
#include "fuzz_support.h"

namespace {

std::string PercentEncode(const std::string& text) {
  std::string out;
  for (const unsigned char c : text) {
    if (std::isalnum(c)) {
      out.push_back(static_cast<char>(c));
    } else {
      char escaped[4];
      std::snprintf(escaped, sizeof(escaped), "%%%02X", c);
      out += escaped;
    }
  }
  return out;
}

std::string UrlOf(const kvd::cache_store::RedisEndpoint& endpoint) {
  if (!endpoint.unix_path.empty()) {
    return "unix://" + endpoint.unix_path + "?db=" + std::to_string(endpoint.db);
  }
  const bool brackets = endpoint.host.find(':') != std::string::npos;
  return "redis://" + PercentEncode(endpoint.user) + ":" + PercentEncode(endpoint.password) + "@" +
         (brackets ? "[" + endpoint.host + "]" : endpoint.host) + ":" +
         std::to_string(endpoint.port) + "/" + std::to_string(endpoint.db);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto endpoint = kvd::cache_store::ParseRedisUrl(kvd::fuzz::AsText(data, size));
  if (!endpoint.ok()) return 0;
  kvd::fuzz::Require(endpoint->unix_path.empty() != endpoint->host.empty(),
                     "an endpoint is either a socket or a host");
  auto again = kvd::cache_store::ParseRedisUrl(UrlOf(*endpoint));
  kvd::fuzz::Require(again.ok() && *again == *endpoint, "a parsed URL does not parse back");
  return 0;
}
