#include "cache_store/store/document_store.h"

#include <openssl/rand.h>

#include <array>
#include <system_error>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "cache_store/store/internal/keys.h"
#include "cache_store/store/payload_codec.h"
#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "rocksdb/write_batch.h"

namespace kvd::cache_store {
namespace {

constexpr int32_t kMaxListLimit = 1000;

absl::Status FromRocks(const rocksdb::Status& status, const std::string& what) {
  if (status.ok()) return absl::OkStatus();
  const std::string message = absl::StrCat(what, ": ", status.ToString());
  switch (status.code()) {
    case rocksdb::Status::kNotFound:
      return absl::NotFoundError(message);
    case rocksdb::Status::kCorruption:
      return absl::DataLossError(message);
    case rocksdb::Status::kInvalidArgument:
      return absl::InvalidArgumentError(message);
    case rocksdb::Status::kBusy:
    case rocksdb::Status::kTryAgain:
    case rocksdb::Status::kTimedOut:
      return absl::UnavailableError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::Status DocumentNotFound(const std::string& id) {
  return absl::NotFoundError(absl::StrCat("document ", id, " not found"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<DocumentStore>> DocumentStore::Open(
    const std::filesystem::path& dir, const DocumentStoreOptions& store_options) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot create document store directory ", dir.string(),
                                            ": ", error.message()));
  }
  rocksdb::DBOptions options;
  options.create_if_missing = true;
  options.create_missing_column_families = true;
  if (store_options.env != nullptr) options.env = store_options.env;
  std::vector<rocksdb::ColumnFamilyDescriptor> families = {
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()},
      {internal::kMetaFamily, rocksdb::ColumnFamilyOptions()},
      {internal::kKvFamily, rocksdb::ColumnFamilyOptions()},
  };
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  rocksdb::Status status = rocksdb::DB::Open(options, dir.string(), families, &handles, &db);
  if (!status.ok()) {
    return FromRocks(status, absl::StrCat("cannot open document store ", dir.string()));
  }
  return std::unique_ptr<DocumentStore>(new DocumentStore(
      std::unique_ptr<rocksdb::DB>(db), std::move(handles), store_options.sync_writes));
}

namespace {
constexpr size_t kRandomIdChars = 22;  // 128 bits in unpadded base64
constexpr std::string_view kIdPrefix = "doc-";
}  // namespace

absl::StatusOr<std::string> DocumentStore::NewDocumentId(const std::string& replica) {
  std::array<unsigned char, 16> random;
  if (RAND_bytes(random.data(), static_cast<int>(random.size())) != 1) {
    return absl::InternalError("the CSPRNG failed to produce a document id");
  }
  return absl::StrCat(std::string(kIdPrefix), replica.empty() ? "" : replica + "-",
                      absl::WebSafeBase64Escape(std::string(random.begin(), random.end())));
}

std::string DocumentStore::ReplicaOfDocumentId(const std::string& id) {
  // "doc-" REPLICA "-" RANDOM: the random part has a fixed length, so the replica's own
  // dashes (kvd-0) need no escaping.
  if (!id.starts_with(kIdPrefix) || id.size() < kIdPrefix.size() + kRandomIdChars + 2) return "";
  const size_t dash = id.size() - kRandomIdChars - 1;
  if (id[dash] != '-') return "";
  return id.substr(kIdPrefix.size(), dash - kIdPrefix.size());
}

DocumentStore::DocumentStore(std::unique_ptr<rocksdb::DB> db,
                             std::vector<rocksdb::ColumnFamilyHandle*> handles, bool sync_writes)
    : db_(std::move(db)),
      handles_(std::move(handles)),
      meta_(handles_[1]),
      kv_(handles_[2]),
      sync_writes_(sync_writes) {}

DocumentStore::~DocumentStore() {
  for (rocksdb::ColumnFamilyHandle* handle : handles_) {
    db_->DestroyColumnFamilyHandle(handle).PermitUncheckedError();
  }
  db_->Close().PermitUncheckedError();
}

absl::Status DocumentStore::Write(rocksdb::WriteBatch& batch, const std::string& what,
                                  bool sync) {
  rocksdb::WriteOptions options;
  options.sync = sync;
  return FromRocks(db_->Write(options, &batch), what);
}

absl::Status DocumentStore::Put(DocumentMeta meta, const DocumentPayload& payload) {
  absl::StatusOr<std::string> bytes = SealDocument(meta, payload);
  if (!bytes.ok()) return bytes.status();
  return PutSealed(meta, *bytes, sync_writes_);
}

absl::Status DocumentStore::PutCopy(DocumentMeta meta, const std::string& sealed) {
  if (absl::Status status = meta.Validate(); !status.ok()) return status;
  meta.stored_bytes = static_cast<int64_t>(sealed.size());
  return PutSealed(meta, sealed, /*sync=*/false);
}

absl::Status DocumentStore::PutSealed(const DocumentMeta& meta, const std::string& sealed,
                                      bool sync) {
  const std::string key = internal::DocumentKey(meta.tenant, meta.id);
  rocksdb::WriteBatch batch;
  rocksdb::Status status = batch.Put(kv_, key, sealed);
  if (status.ok()) status = batch.Put(meta_, key, EncodeMeta(meta));
  const std::string what = absl::StrCat("cannot write document ", meta.id);
  if (!status.ok()) return FromRocks(status, what);
  return Write(batch, what, sync);
}

absl::Status DocumentStore::PutMeta(const DocumentMeta& meta) {
  if (absl::Status status = meta.Validate(); !status.ok()) return status;
  const std::string key = internal::DocumentKey(meta.tenant, meta.id);
  rocksdb::WriteBatch batch;
  rocksdb::Status status = batch.Delete(kv_, key);
  if (status.ok()) status = batch.Put(meta_, key, EncodeMeta(meta));
  const std::string what = absl::StrCat("cannot write document ", meta.id);
  if (!status.ok()) return FromRocks(status, what);
  return Write(batch, what);
}

absl::StatusOr<DocumentMeta> DocumentStore::GetMeta(const std::string& tenant,
                                                    const std::string& id) const {
  std::string bytes;
  rocksdb::Status status =
      db_->Get(rocksdb::ReadOptions(), meta_, internal::DocumentKey(tenant, id), &bytes);
  if (status.IsNotFound()) return DocumentNotFound(id);
  if (!status.ok()) return FromRocks(status, absl::StrCat("cannot read document ", id));
  return DecodeMeta(bytes);
}

absl::StatusOr<DocumentPayload> DocumentStore::GetPayload(const std::string& tenant,
                                                          const std::string& id,
                                                          const CacheIdentity& expected) const {
  // One snapshot for both reads, so meta and payload come from the same Put.
  rocksdb::ManagedSnapshot snapshot(db_.get());
  rocksdb::ReadOptions read;
  read.snapshot = snapshot.snapshot();
  read.verify_checksums = true;
  const std::string key = internal::DocumentKey(tenant, id);
  std::string bytes;
  rocksdb::Status status = db_->Get(read, meta_, key, &bytes);
  if (status.IsNotFound()) return DocumentNotFound(id);
  if (!status.ok()) return FromRocks(status, absl::StrCat("cannot read document ", id));
  absl::StatusOr<DocumentMeta> meta = DecodeMeta(bytes);
  if (!meta.ok()) return meta.status();
  if (absl::Status reusable = CheckReusable(*meta, expected); !reusable.ok()) return reusable;
  status = db_->Get(read, kv_, key, &bytes);
  if (status.IsNotFound()) {
    return absl::DataLossError(absl::StrCat("document ", id, " is ready but has no payload"));
  }
  if (!status.ok()) return FromRocks(status, absl::StrCat("cannot read document ", id));
  absl::StatusOr<DocumentPayload> payload = DecodePayload(bytes);
  if (!payload.ok()) {
    return absl::DataLossError(
        absl::StrCat("document ", id, ": ", std::string(payload.status().message())));
  }
  return payload;
}

absl::StatusOr<DocumentPage> DocumentStore::List(const std::string& tenant,
                                                 const std::string& page_token,
                                                 int32_t limit) const {
  if (limit < 1 || limit > kMaxListLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("list limit must be in [1, ", kMaxListLimit, "], got ", limit));
  }
  const std::string prefix = internal::TenantPrefix(tenant);
  rocksdb::ReadOptions read;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read, meta_));
  // Ids after the token: the token's key plus a zero byte is the smallest key beyond it.
  it->Seek(page_token.empty() ? prefix : prefix + page_token + std::string(1, '\0'));
  DocumentPage page;
  for (; it->Valid() && it->key().starts_with(prefix); it->Next()) {
    if (static_cast<int32_t>(page.documents.size()) == limit) {
      page.next_page_token = page.documents.back().id;
      break;
    }
    absl::StatusOr<DocumentMeta> meta = DecodeMeta(it->value().ToString());
    if (!meta.ok()) return meta.status();
    page.documents.push_back(*std::move(meta));
  }
  if (!it->status().ok()) return FromRocks(it->status(), "cannot list documents");
  return page;
}

absl::Status DocumentStore::Delete(const std::string& tenant, const std::string& id) {
  const std::string key = internal::DocumentKey(tenant, id);
  std::string bytes;
  rocksdb::Status status = db_->Get(rocksdb::ReadOptions(), meta_, key, &bytes);
  if (status.IsNotFound()) return DocumentNotFound(id);
  if (!status.ok()) return FromRocks(status, absl::StrCat("cannot read document ", id));
  rocksdb::WriteBatch batch;
  status = batch.Delete(meta_, key);
  if (status.ok()) status = batch.Delete(kv_, key);
  const std::string what = absl::StrCat("cannot delete document ", id);
  if (!status.ok()) return FromRocks(status, what);
  return Write(batch, what);
}

absl::StatusOr<int64_t> DocumentStore::DeleteExpired(absl::Time now) {
  rocksdb::WriteBatch batch;
  int64_t count = 0;
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), meta_));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      absl::StatusOr<DocumentMeta> meta = DecodeMeta(it->value().ToString());
      // A corrupt meta is left for an operator to see, not swept silently.
      if (!meta.ok() || meta->expires > now) continue;
      rocksdb::Status status = batch.Delete(meta_, it->key());
      if (status.ok()) status = batch.Delete(kv_, it->key());
      if (!status.ok()) return FromRocks(status, "cannot delete expired documents");
      ++count;
    }
    if (!it->status().ok()) return FromRocks(it->status(), "cannot scan for expired documents");
  }
  if (count == 0) return count;
  if (absl::Status status = Write(batch, "cannot delete expired documents"); !status.ok()) {
    return status;
  }
  return count;
}

absl::StatusOr<int64_t> DocumentStore::ForEachMeta(
    const std::function<void(const DocumentMeta&)>& visit) const {
  int64_t unreadable = 0;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), meta_));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    absl::StatusOr<DocumentMeta> meta = DecodeMeta(it->value().ToString());
    if (meta.ok()) {
      visit(*meta);
    } else {
      ++unreadable;
    }
  }
  if (!it->status().ok()) return FromRocks(it->status(), "cannot scan the documents");
  return unreadable;
}

absl::Status DocumentStore::Flush() {
  return FromRocks(db_->Flush(rocksdb::FlushOptions(), handles_), "cannot flush the store");
}

}  // namespace kvd::cache_store
