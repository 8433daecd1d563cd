// This replica's stored responses (response_store.h), in their own RocksDB database; the
// records already expired are dropped when it opens. Writes do not wait for the log's sync: a
// crash may lose the last responses, never corrupt one.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/responses/response_store.h"

namespace rocksdb {
class DB;
}  // namespace rocksdb

namespace kvd::server::responses {

class LocalResponseStore final : public ResponseStore {
 public:
  // Opens (creating) the database in `dir` and drops the records already expired.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<LocalResponseStore>> Open(
      const std::filesystem::path& dir, absl::Duration ttl);
  ~LocalResponseStore() override;
  LocalResponseStore(const LocalResponseStore&) = delete;
  LocalResponseStore& operator=(const LocalResponseStore&) = delete;

  absl::Status Put(const std::string& tenant, const std::string& id,
                   const StoredResponse& stored) override;
  absl::StatusOr<StoredResponse> Get(const std::string& tenant, const std::string& id) override;
  absl::Status Delete(const std::string& tenant, const std::string& id) override;
  bool remote() const override { return false; }
  std::optional<cache_store::RedisCallStats> SharedTierCalls() const override {
    return std::nullopt;
  }

 private:
  LocalResponseStore(std::unique_ptr<rocksdb::DB> db, absl::Duration ttl);

  std::unique_ptr<rocksdb::DB> db_;
  const absl::Duration ttl_;
};

}  // namespace kvd::server::responses
