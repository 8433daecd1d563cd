// The shared document tier: every replica's documents in one Redis, so that a document stored
// by one replica is served by any other and survives the loss of the replica that made it.
// Each document is one hash (fields `meta` and `kv`, the same bytes the local store keeps)
// written with its expiry and its index entry by one Lua script (atomic in Redis), and each
// tenant has a sorted set of its ids for listing; keys are tenant-scoped as the local store's are. Everything read back is checked as
// a local read is: a value that is corrupt or names another document is DataLoss.
//
// Thread-safety: every method may be called from any thread; each call borrows a connection of
// its own from a small pool (redis_pool.h). Calls block on the network (each connect, read and write bounded
// by the configured timeout), so keep them off I/O threads; after a call could not reach
// Redis by waiting out a timeout, calls fail at once for a second.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/histogram.h"
#include "base/mutex.h"
#include "cache_store/store/document_meta.h"
#include "cache_store/store/document_payload.h"
#include "cache_store/store/document_store.h"
#include "cache_store/store/redis_pool.h"

namespace kvd::cache_store {

struct RemoteStoreOptions {
  RedisEndpoint endpoint;
  // Bound on connecting and on each round trip; past it a call is Unavailable. Default 2 s.
  absl::Duration timeout = absl::Seconds(2);
  // Largest payload written or read; a larger one is InvalidArgument (code request_too_large)
  // on write and DataLoss on read. Default 256 MiB.
  int64_t max_payload_bytes = int64_t{256} << 20;
  // Prepended to every key, so that several deployments can share one Redis. Default "kvd:".
  std::string key_prefix = "kvd:";
  // How long a processing meta lives in Redis unless its compression finishes: a replica that
  // dies mid-compression leaves nothing behind for longer. Default 1 h.
  absl::Duration processing_lease = absl::Hours(1);
  // Connections kept open between calls. Default 4.
  int idle_connections = 4;
};

// A ready document as read from the shared tier: its meta, its cache, and the sealed bytes the
// cache was decoded from (which a local copy can store as they are).
struct RemoteDocument {
  DocumentMeta meta;
  DocumentPayload payload;
  std::string sealed;
};

// Counters of the tier's traffic, for the metrics exporter.
struct RemoteStoreStats {
  int64_t reads = 0;          // calls that read (meta, document, list)
  int64_t writes = 0;         // calls that write (meta, document, delete)
  int64_t hits = 0;           // document reads that found a ready document
  int64_t misses = 0;         // document reads that found none
  int64_t failures = 0;       // calls that could not reach Redis or were refused by it
  int64_t bytes_read = 0;     // payload bytes
  int64_t bytes_written = 0;  // payload bytes
  base::HistogramSnapshot seconds;  // each call's latency
};

class RemoteDocumentStore {
 public:
  // Connects lazily: a Redis that is down at start is an error of the first call, not of this.
  explicit RemoteDocumentStore(RemoteStoreOptions options);
  RemoteDocumentStore(const RemoteDocumentStore&) = delete;
  RemoteDocumentStore& operator=(const RemoteDocumentStore&) = delete;

  const RemoteStoreOptions& options() const { return options_; }

  // Unavailable unless Redis answers.
  [[nodiscard]] absl::Status Ping();
  // Writes meta and payload in one atomic step, with the meta's expiry; sets meta's sizes as
  // DocumentStore::Put does. With `must_exist`, NotFound (and nothing written) when the
  // document is gone: a document deleted on another replica while this one compressed or
  // re-cut it stays deleted. InvalidArgument (code request_too_large) for a payload over
  // max_payload_bytes; Unavailable when Redis cannot be reached or refuses for now.
  [[nodiscard]] absl::Status Put(DocumentMeta meta, const DocumentPayload& payload,
                                 bool must_exist);
  // Writes meta alone and drops any payload, as Put; a processing meta expires after
  // processing_lease at most.
  [[nodiscard]] absl::Status PutMeta(const DocumentMeta& meta, bool must_exist);
  // NotFound as DocumentStore::GetMeta; DataLoss for a corrupt or foreign value.
  [[nodiscard]] absl::StatusOr<DocumentMeta> GetMeta(const std::string& tenant,
                                                     const std::string& id);
  // Meta and payload from one read. NotFound as GetMeta, FailedPrecondition when not ready,
  // DataLoss when either is corrupt, foreign, inconsistent or over max_payload_bytes.
  [[nodiscard]] absl::StatusOr<RemoteDocument> GetDocument(const std::string& tenant,
                                                           const std::string& id);
  // As DocumentStore::List (ids the index holds whose documents expired are dropped from it).
  [[nodiscard]] absl::StatusOr<DocumentPage> List(const std::string& tenant,
                                                  const std::string& page_token, int32_t limit);
  // Whether Redis holds each (tenant, id), in one round trip.
  [[nodiscard]] absl::StatusOr<std::vector<bool>> Exist(
      const std::vector<std::pair<std::string, std::string>>& documents);
  // NotFound when Redis has no such document.
  [[nodiscard]] absl::Status Delete(const std::string& tenant, const std::string& id);

  RemoteStoreStats Stats() const;

 private:
  enum class Call { kRead, kWrite };
  // Runs `commands` on a pooled connection.
  absl::StatusOr<std::vector<RedisReply>> Run(Call call,
                                              const std::vector<std::vector<std::string>>& commands);
  [[nodiscard]] absl::Status Write(const DocumentMeta& meta, const std::string& payload,
                                   absl::Time expires, bool must_exist);
  // The replies of a MULTI ... EXEC pipeline's commands, or why the transaction failed.
  absl::StatusOr<std::vector<RedisReply>> Transaction(
      Call call, std::vector<std::vector<std::string>> commands);
  std::string DocumentKey(const std::string& tenant, const std::string& id) const;
  std::string IndexKey(const std::string& tenant) const;
  absl::StatusOr<DocumentMeta> DecodeOwnMeta(const std::string& bytes, const std::string& tenant,
                                             const std::string& id) const;
  void Count(const std::function<void(RemoteStoreStats&)>& update);

  const RemoteStoreOptions options_;
  RedisPool pool_;
  mutable base::Mutex stats_mu_;
  RemoteStoreStats stats_ ABSL_GUARDED_BY(stats_mu_);  // hits, misses and bytes
};

}  // namespace kvd::cache_store
