// The persistent document store: each tenant's compressed document caches and their metadata
// in RocksDB, reused by every later question and across restarts.
//
// Thread-safety: every method may be called from any thread concurrently; RocksDB serialises
// writes and reads see consistent snapshots. The store holds no other mutable state.
//
// Durability: a write returns once it is in RocksDB's write-ahead log, synced to disk unless
// DocumentStoreOptions::sync_writes is off; a batch is recovered whole or not at all.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cache_store/store/cache_identity.h"
#include "cache_store/store/document_meta.h"
#include "cache_store/store/document_payload.h"

namespace rocksdb {
class ColumnFamilyHandle;
class DB;
class Env;
class WriteBatch;
}  // namespace rocksdb

namespace kvd::cache_store {

struct DocumentStoreOptions {
  // Sync the write-ahead log to disk before a write returns, so that what the store
  // acknowledged survives an OS crash or power loss; without it, only a process crash
  // (the OS still holds the log). Costs one fsync per write (docs/benchmarks.md). Default true.
  bool sync_writes = true;
  // The RocksDB environment the store's files go through; borrowed, must outlive the store.
  // nullptr: RocksDB's default (the local file system). Tests pass one that simulates power
  // loss. Default nullptr.
  rocksdb::Env* env = nullptr;
};

// One page of a tenant's documents, in id order.
struct DocumentPage {
  std::vector<DocumentMeta> documents;
  std::string next_page_token;  // pass to List for the next page; empty on the last page
};

class DocumentStore {
 public:
  // Opens the store in `dir`, creating the directory and column families `meta` and `kv` as
  // needed. Unavailable (or RocksDB's code) when the directory is locked by another process.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<DocumentStore>> Open(
      const std::filesystem::path& dir, const DocumentStoreOptions& options = {});

  // A fresh document id: "doc-", the replica's name and "-" when it has one, then 128 random
  // bits from OpenSSL's CSPRNG in URL-safe base64 without padding (22 characters). Internal
  // when the CSPRNG fails.
  [[nodiscard]] static absl::StatusOr<std::string> NewDocumentId(const std::string& replica = "");
  // The replica named in a document id ("" when it names none or is not an id of this form).
  static std::string ReplicaOfDocumentId(const std::string& id);

  DocumentStore(const DocumentStore&) = delete;
  DocumentStore& operator=(const DocumentStore&) = delete;
  // Closes the database; data already written survives.
  ~DocumentStore();

  // Writes meta and payload in one atomic batch: readers see the old document or the new
  // one, never half of it. Sets meta.stored_bytes and meta.kept_entries from the payload.
  // InvalidArgument when either fails validation.
  [[nodiscard]] absl::Status Put(DocumentMeta meta, const DocumentPayload& payload);
  // Writes a copy of a document whose truth is kept elsewhere (the shared tier): `sealed` are
  // the payload's bytes as EncodePayload made them, already checked against `meta` by the
  // caller. Never waits for the log's sync: a crash may lose the copy, and a later read
  // fetches it again. InvalidArgument when the meta fails validation.
  [[nodiscard]] absl::Status PutCopy(DocumentMeta meta, const std::string& sealed);
  // Writes meta alone and drops any payload: a document that is processing or failed.
  [[nodiscard]] absl::Status PutMeta(const DocumentMeta& meta);

  // NotFound when the tenant has no document `id` (also when another tenant has one: the
  // two cases answer the same). DataLoss when the stored meta is corrupt.
  [[nodiscard]] absl::StatusOr<DocumentMeta> GetMeta(const std::string& tenant,
                                                     const std::string& id) const;
  // The document's cache, when it may be reused with `expected`: NotFound as GetMeta;
  // FailedPrecondition naming the differing identity field, or when the document is not
  // ready; DataLoss when the stored payload is corrupt.
  [[nodiscard]] absl::StatusOr<DocumentPayload> GetPayload(const std::string& tenant,
                                                           const std::string& id,
                                                           const CacheIdentity& expected) const;
  // Up to `limit` (1..1000) of the tenant's documents with ids after `page_token` (empty:
  // from the start), in id order.
  [[nodiscard]] absl::StatusOr<DocumentPage> List(const std::string& tenant,
                                                  const std::string& page_token,
                                                  int32_t limit) const;
  // Removes the document; NotFound when the tenant has none with this id.
  [[nodiscard]] absl::Status Delete(const std::string& tenant, const std::string& id);
  // Removes every document of every tenant whose expiry is at or before `now`; returns how
  // many. A document rewritten during the sweep may be removed by it.
  [[nodiscard]] absl::StatusOr<int64_t> DeleteExpired(absl::Time now);
  // Calls `visit` with every readable meta of every tenant (undecodable ones are skipped and
  // counted in the result), in key order, from one snapshot.
  [[nodiscard]] absl::StatusOr<int64_t> ForEachMeta(
      const std::function<void(const DocumentMeta&)>& visit) const;
  // Writes everything in memory to disk (the write-ahead log already makes writes durable,
  // against an OS crash too with sync_writes; this shortens recovery after a clean stop).
  [[nodiscard]] absl::Status Flush();

 private:
  DocumentStore(std::unique_ptr<rocksdb::DB> db, std::vector<rocksdb::ColumnFamilyHandle*> handles,
                bool sync_writes);
  // Every write: meta and payload batches, deletes, expiry sweeps; synced when `sync`.
  [[nodiscard]] absl::Status Write(rocksdb::WriteBatch& batch, const std::string& what,
                                   bool sync);
  [[nodiscard]] absl::Status Write(rocksdb::WriteBatch& batch, const std::string& what) {
    return Write(batch, what, sync_writes_);
  }
  // Meta and sealed payload in one batch.
  [[nodiscard]] absl::Status PutSealed(const DocumentMeta& meta, const std::string& sealed,
                                       bool sync);

  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;  // owned; default, meta, kv
  rocksdb::ColumnFamilyHandle* meta_;
  rocksdb::ColumnFamilyHandle* kv_;
  const bool sync_writes_;
};

}  // namespace kvd::cache_store
