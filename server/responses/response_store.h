// Stored responses of the Responses API, for `previous_response_id` and GET / DELETE
// /v1/responses/{id}: per tenant (another tenant's id reads as missing), each expiring after
// the operator's `responses.ttl_seconds`. A record holds the response object as it was returned
// and the conversation it ended (input items, the previous responses' first, then its output
// items), as JSON text that is checked again when read. Kept in this replica's RocksDB
// (local_response_store.h), or in the shared tier's Redis when `store.remote` configures one
// (shared_response_store.h), so that any replica continues any conversation.
//
// Thread-safety: every method may be called from any thread concurrently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "cache_store/store/redis_pool.h"
#include "structured/json_rules.h"

namespace kvd::server::responses {

struct StoredResponse {
  structured::JsonValue response;      // the response object
  structured::JsonValue conversation;  // normalized items, oldest first
};

class ResponseStore {
 public:
  virtual ~ResponseStore() = default;

  [[nodiscard]] virtual absl::Status Put(const std::string& tenant, const std::string& id,
                                         const StoredResponse& stored) = 0;
  // NotFound (code response_not_found) when missing, expired or another tenant's; Internal when
  // the record does not read back as one; Unavailable when the shared tier does not answer.
  [[nodiscard]] virtual absl::StatusOr<StoredResponse> Get(const std::string& tenant,
                                                           const std::string& id) = 0;
  // NotFound as Get.
  [[nodiscard]] virtual absl::Status Delete(const std::string& tenant, const std::string& id) = 0;
  // Whether calls wait on the network, so that HTTP threads hand them to workers.
  virtual bool remote() const = 0;
  // The calls made to the shared tier so far (for /metrics); none for a local store.
  virtual std::optional<cache_store::RedisCallStats> SharedTierCalls() const = 0;
};

// A record as both stores keep it: {"expires_at": unix seconds, "response", "conversation"}.
std::string EncodeResponseRecord(const StoredResponse& stored, int64_t expires_at);

struct ResponseRecord {
  int64_t expires_at = 0;
  StoredResponse stored;
};
// Internal unless `text` is a record whose response is the one named `id`.
[[nodiscard]] absl::StatusOr<ResponseRecord> DecodeResponseRecord(const std::string& text,
                                                                  const std::string& id);

// Whether a record with this expiry has expired.
bool ResponseExpired(int64_t expires_at);

// NotFound, code response_not_found.
absl::Status ResponseNotFound(const std::string& id);

}  // namespace kvd::server::responses
