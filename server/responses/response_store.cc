#include "server/responses/response_store.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_details.h"
#include "base/status_macros.h"
#include "engine/bounded_json.h"
#include "rocksdb/db.h"

namespace kvd::server::responses {
namespace {

using structured::JsonValue;

// The tenant's length first, so that no tenant's keys can be another's.
std::string Key(const std::string& tenant, const std::string& id) {
  return absl::StrCat(tenant.size(), ":", tenant, id);
}

absl::Status NotFound(const std::string& id) {
  return WithErrorCode(absl::NotFoundError(absl::StrCat("no response with id '", id, "'")),
                       "response_not_found");
}

absl::Status FromRocks(const rocksdb::Status& status, const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", status.ToString()));
}

// A record: {"expires_at": unix seconds, "response": ..., "conversation": [...]}.
struct Record {
  int64_t expires_at = 0;
  StoredResponse stored;
};

absl::StatusOr<Record> Decode(const std::string& text) {
  auto value = engine::ParseBoundedJson<JsonValue>(text, "a stored response");
  if (!value.ok() || !value->is_object() || !value->contains("expires_at") ||
      !(*value)["expires_at"].is_number_integer() || !value->contains("response") ||
      !(*value)["response"].is_object() || !value->contains("conversation") ||
      !(*value)["conversation"].is_array()) {
    return absl::InternalError("a stored response does not read back");
  }
  Record record;
  record.expires_at = (*value)["expires_at"].get<int64_t>();
  record.stored.response = std::move((*value)["response"]);
  record.stored.conversation = std::move((*value)["conversation"]);
  return record;
}

bool Expired(int64_t expires_at) { return absl::ToUnixSeconds(absl::Now()) >= expires_at; }

}  // namespace

absl::StatusOr<std::unique_ptr<ResponseStore>> ResponseStore::Open(const std::filesystem::path& dir,
                                                                   absl::Duration ttl) {
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
  std::unique_ptr<ResponseStore> store(new ResponseStore(std::unique_ptr<rocksdb::DB>(db), ttl));
  std::vector<std::string> expired;
  std::unique_ptr<rocksdb::Iterator> it(store->db_->NewIterator(rocksdb::ReadOptions()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto record = Decode(it->value().ToString());
    if (!record.ok() || Expired(record->expires_at)) expired.push_back(it->key().ToString());
  }
  if (!it->status().ok()) return FromRocks(it->status(), "cannot read the response store");
  it.reset();
  for (const std::string& key : expired) {
    const rocksdb::Status deleted = store->db_->Delete(rocksdb::WriteOptions(), key);
    if (!deleted.ok()) return FromRocks(deleted, "cannot drop an expired response");
  }
  return store;
}

ResponseStore::ResponseStore(std::unique_ptr<rocksdb::DB> db, absl::Duration ttl)
    : db_(std::move(db)), ttl_(ttl) {}

ResponseStore::~ResponseStore() { db_->Close().PermitUncheckedError(); }

absl::Status ResponseStore::Put(const std::string& tenant, const std::string& id,
                                const StoredResponse& stored) {
  const JsonValue record = {{"expires_at", absl::ToUnixSeconds(absl::Now() + ttl_)},
                            {"response", stored.response},
                            {"conversation", stored.conversation}};
  const rocksdb::Status status =
      db_->Put(rocksdb::WriteOptions(), Key(tenant, id),
               record.dump(-1, ' ', false, JsonValue::error_handler_t::replace));
  return status.ok() ? absl::OkStatus() : FromRocks(status, "cannot store the response");
}

absl::StatusOr<StoredResponse> ResponseStore::Get(const std::string& tenant,
                                                  const std::string& id) const {
  std::string text;
  const rocksdb::Status status = db_->Get(rocksdb::ReadOptions(), Key(tenant, id), &text);
  if (status.IsNotFound()) return NotFound(id);
  if (!status.ok()) return FromRocks(status, "cannot read the response store");
  auto record = Decode(text);
  if (!record.ok()) return record.status();
  if (Expired(record->expires_at)) return NotFound(id);
  return std::move(record->stored);
}

absl::Status ResponseStore::Delete(const std::string& tenant, const std::string& id) {
  KVD_RETURN_IF_ERROR(Get(tenant, id).status());
  const rocksdb::Status status = db_->Delete(rocksdb::WriteOptions(), Key(tenant, id));
  return status.ok() ? absl::OkStatus() : FromRocks(status, "cannot delete the response");
}

}  // namespace kvd::server::responses
