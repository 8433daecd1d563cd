#include "server/responses/local_response_store.h"

#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "rocksdb/db.h"

namespace kvd::server::responses {
namespace {

// The tenant's length first, so that no tenant's keys can be another's.
std::string Key(const std::string& tenant, const std::string& id) {
  return absl::StrCat(tenant.size(), ":", tenant, id);
}

// The id of a key Key wrote; "" for a key it did not write.
std::string IdOf(const std::string& key) {
  const size_t colon = key.find(':');
  size_t length = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(key.substr(0, colon), &length) ||
      length > key.size() - colon - 1) {
    return "";
  }
  return key.substr(colon + 1 + length);
}

absl::Status FromRocks(const rocksdb::Status& status, const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", status.ToString()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<LocalResponseStore>> LocalResponseStore::Open(
    const std::filesystem::path& dir, absl::Duration ttl) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot create the response store ", dir.string(), ": ", error.message()));
  }
  rocksdb::Options options;
  options.create_if_missing = true;
  rocksdb::DB* db = nullptr;
  const rocksdb::Status status = rocksdb::DB::Open(options, dir.string(), &db);
  if (!status.ok()) {
    return status.IsIOError() && status.ToString().find("lock") != std::string::npos
               ? absl::UnavailableError(absl::StrCat("the response store ", dir.string(),
                                                     " is in use: ", status.ToString()))
               : FromRocks(status, absl::StrCat("cannot open the response store ", dir.string()));
  }
  std::unique_ptr<LocalResponseStore> store(
      new LocalResponseStore(std::unique_ptr<rocksdb::DB>(db), ttl));
  std::vector<std::string> expired;
  std::unique_ptr<rocksdb::Iterator> it(store->db_->NewIterator(rocksdb::ReadOptions()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string key = it->key().ToString();
    auto record = DecodeResponseRecord(it->value().ToString(), IdOf(key));
    if (!record.ok() || ResponseExpired(record->expires_at)) expired.push_back(key);
  }
  if (!it->status().ok()) return FromRocks(it->status(), "cannot read the response store");
  it.reset();
  for (const std::string& key : expired) {
    const rocksdb::Status deleted = store->db_->Delete(rocksdb::WriteOptions(), key);
    if (!deleted.ok()) return FromRocks(deleted, "cannot drop an expired response");
  }
  return store;
}

LocalResponseStore::LocalResponseStore(std::unique_ptr<rocksdb::DB> db, absl::Duration ttl)
    : db_(std::move(db)), ttl_(ttl) {}

LocalResponseStore::~LocalResponseStore() { db_->Close().PermitUncheckedError(); }

absl::Status LocalResponseStore::Put(const std::string& tenant, const std::string& id,
                                     const StoredResponse& stored) {
  const rocksdb::Status status =
      db_->Put(rocksdb::WriteOptions(), Key(tenant, id),
               EncodeResponseRecord(stored, absl::ToUnixSeconds(absl::Now() + ttl_)));
  return status.ok() ? absl::OkStatus() : FromRocks(status, "cannot store the response");
}

absl::StatusOr<StoredResponse> LocalResponseStore::Get(const std::string& tenant,
                                                       const std::string& id) {
  std::string text;
  const rocksdb::Status status = db_->Get(rocksdb::ReadOptions(), Key(tenant, id), &text);
  if (status.IsNotFound()) return ResponseNotFound(id);
  if (!status.ok()) return FromRocks(status, "cannot read the response store");
  auto record = DecodeResponseRecord(text, id);
  if (!record.ok()) return record.status();
  if (ResponseExpired(record->expires_at)) return ResponseNotFound(id);
  return std::move(record->stored);
}

absl::Status LocalResponseStore::Delete(const std::string& tenant, const std::string& id) {
  KVD_RETURN_IF_ERROR(Get(tenant, id).status());
  const rocksdb::Status status = db_->Delete(rocksdb::WriteOptions(), Key(tenant, id));
  return status.ok() ? absl::OkStatus() : FromRocks(status, "cannot delete the response");
}

}  // namespace kvd::server::responses
