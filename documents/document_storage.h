// Where documents live: this replica's store and, when `store.remote` is configured, the shared
// tier that every replica reads and writes. Writes go to the shared tier first, so that what a
// replica acknowledges every replica can serve; reads take the shared tier's meta as the truth
// (a delete or re-cut on another replica shows at once) and its cache when the local copy is
// missing or stale, keeping a copy locally. While the shared tier is unreachable, documents held
// locally are still served, and writes are Unavailable with a retry hint. Thread-safe, as both
// stores are.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "cache_store/store/document_meta.h"
#include "cache_store/store/document_payload.h"
#include "cache_store/store/document_store.h"
#include "cache_store/store/remote_document_store.h"
#include "documents/request_workers.h"

namespace kvd::documents {

class DocumentStorage {
 public:
  // `remote` may be null: a single replica's store alone.
  DocumentStorage(std::unique_ptr<cache_store::DocumentStore> local,
                  std::unique_ptr<cache_store::RemoteDocumentStore> remote);

  // The replica's own store, for what concerns its copies alone: expiry sweeps, usage counts,
  // flushes.
  cache_store::DocumentStore& local() const { return *local_; }
  bool shared() const { return remote_ != nullptr; }

  // Meta and payload of a document that exists (a finished compression's, a re-cut's): in the
  // shared tier first, then locally (keeping the local copy's home: kShared where this replica
  // uploaded it, else kCopy). NotFound, and nothing written there, when the shared tier no
  // longer has the document (deleted on another replica meanwhile). The shared tier's refusal
  // is Unavailable with a retry hint (code shared_tier_unavailable), or InvalidArgument
  // (request_too_large) for a payload over its limit.
  [[nodiscard]] absl::Status Put(cache_store::DocumentMeta meta,
                                 const cache_store::DocumentPayload& payload);
  // A new document's meta (processing), in the shared tier first, then locally.
  [[nodiscard]] absl::Status PutMeta(cache_store::DocumentMeta meta);
  // A failed document's meta: locally whatever happens, and in the shared tier when it can be
  // reached (a refusal there is logged; its processing meta expires on its own); when the
  // shared tier no longer has the document, it is removed here instead.
  [[nodiscard]] absl::Status PutFailedMeta(cache_store::DocumentMeta meta);

  // The shared tier's meta; this replica's when the shared tier cannot be reached or never had
  // the document (one stored before the tier was configured). A copy the shared tier no longer
  // holds is removed here, and the document is NotFound.
  [[nodiscard]] absl::StatusOr<cache_store::DocumentMeta> GetMeta(const std::string& tenant,
                                                                  const std::string& id);
  // The cache, as DocumentStore::GetPayload: the local copy when it is there and is `expected`,
  // else the shared tier's, checked the same way and then kept locally as a kCopy (written on a
  // thread of its own, so the read does not wait for it).
  [[nodiscard]] absl::StatusOr<cache_store::DocumentPayload> GetPayload(
      const std::string& tenant, const std::string& id, const cache_store::CacheIdentity& expected);
  // The shared tier's list; this replica's when the shared tier cannot be reached.
  [[nodiscard]] absl::StatusOr<cache_store::DocumentPage> List(const std::string& tenant,
                                                               const std::string& page_token,
                                                               int32_t limit);
  // Removes the document from the shared tier, then here. Unavailable when the shared tier
  // cannot be reached (nothing is removed: it would live on in other replicas).
  [[nodiscard]] absl::Status Delete(const std::string& tenant, const std::string& id);

  // Removes the local copies of shared documents the shared tier no longer holds (deleted on
  // another replica, or expired); returns how many. Unavailable while it cannot be reached.
  [[nodiscard]] absl::StatusOr<int64_t> DropStaleCopies();

  std::optional<cache_store::RemoteStoreStats> RemoteStats() const;

  // Returns once every copy posted before the call is written: a read that falls back on the
  // local store while the shared tier is unreachable sees every copy an earlier read made.
  void AwaitCopies();
  // The largest payload the shared tier takes; none without one.
  std::optional<int64_t> RemoteLimit() const;

 private:
  const std::unique_ptr<cache_store::DocumentStore> local_;
  const std::unique_ptr<cache_store::RemoteDocumentStore> remote_;
  // Queues the local copy of a document read from the shared tier.
  void KeepCopy(cache_store::DocumentMeta meta, std::string sealed);

  base::Mutex copies_mu_;
  std::set<std::string> copying_ ABSL_GUARDED_BY(copies_mu_);  // tenant and id, being copied
  // Writes the copies of documents read from the shared tier after the read has answered.
  // Declared last: its destructor runs what was posted while both stores still exist.
  RequestWorkers copier_{1};
};

}  // namespace kvd::documents
