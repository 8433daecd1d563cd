// Stored responses (response_store.h) in the shared tier's Redis (`store.remote`), so that any
// replica continues a conversation any other answered: one string key a response, tenant-scoped
// as the documents' are (`<key_prefix>resp:<tenant in hex>:<id>`), written with its expiry, so
// Redis drops it when the TTL passes. Each call is one round trip on the tier's pool, bounded
// by its timeout (redis_pool.h).
#pragma once

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "cache_store/store/redis_pool.h"
#include "server/responses/response_store.h"

namespace kvd::server::responses {

class SharedResponseStore final : public ResponseStore {
 public:
  SharedResponseStore(std::shared_ptr<cache_store::RedisPool> pool, std::string key_prefix,
                      absl::Duration ttl);

  // Unavailable when Redis does not answer or refuses for now.
  absl::Status Put(const std::string& tenant, const std::string& id,
                   const StoredResponse& stored) override;
  absl::StatusOr<StoredResponse> Get(const std::string& tenant, const std::string& id) override;
  absl::Status Delete(const std::string& tenant, const std::string& id) override;
  bool remote() const override { return true; }
  std::optional<cache_store::RedisCallStats> SharedTierCalls() const override {
    return pool_->Stats();
  }

 private:
  std::string Key(const std::string& tenant, const std::string& id) const;
  // The one reply of `command`, or why there is none.
  absl::StatusOr<cache_store::RedisReply> Call(cache_store::RedisPool::Call call,
                                               std::vector<std::string> command,
                                               const char* doing);

  const std::shared_ptr<cache_store::RedisPool> pool_;
  const std::string key_prefix_;
  const absl::Duration ttl_;
};

}  // namespace kvd::server::responses
