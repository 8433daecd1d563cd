// Stored responses of the Responses API, for `previous_response_id` and GET / DELETE
// /v1/responses/{id}: per tenant (another tenant's id reads as missing), each expiring after
// the operator's `responses.ttl_seconds`, in their own RocksDB database. A record holds the
// response object as it was returned and the conversation it ended (input items, the previous
// responses' first, then its output items), as JSON text that is checked again when read.
// Writes do not wait for the log's sync: a crash may lose the last responses, never corrupt one.
//
// Thread-safety: every method may be called from any thread concurrently.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "structured/json_rules.h"

namespace rocksdb {
class DB;
}  // namespace rocksdb

namespace kvd::server::responses {

struct StoredResponse {
  structured::JsonValue response;      // the response object
  structured::JsonValue conversation;  // normalized items, oldest first
};

class ResponseStore {
 public:
  // Opens (creating) the database in `dir` and drops the records already expired.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ResponseStore>> Open(
      const std::filesystem::path& dir, absl::Duration ttl);
  ~ResponseStore();
  ResponseStore(const ResponseStore&) = delete;
  ResponseStore& operator=(const ResponseStore&) = delete;

  [[nodiscard]] absl::Status Put(const std::string& tenant, const std::string& id,
                                 const StoredResponse& stored);
  // NotFound (code response_not_found) when missing, expired or another tenant's; Internal when
  // the record does not read back as one.
  [[nodiscard]] absl::StatusOr<StoredResponse> Get(const std::string& tenant,
                                                   const std::string& id) const;
  // NotFound as Get.
  [[nodiscard]] absl::Status Delete(const std::string& tenant, const std::string& id);

 private:
  ResponseStore(std::unique_ptr<rocksdb::DB> db, absl::Duration ttl);

  std::unique_ptr<rocksdb::DB> db_;
  const absl::Duration ttl_;
};

}  // namespace kvd::server::responses
