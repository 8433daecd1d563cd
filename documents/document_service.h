// Upload-once documents as the HTTP and gRPC handlers see them: upload, get, list, delete,
// re-cut and resolve, each validated, authorised and mapped to a status in one place. The work
// is split by job: upload_plan.h checks and sizes an upload, usage_ledger.h charges quotas,
// compression_jobs.h tracks the running compressions, document_writer.h stores their results
// and sweeps expiry on its own thread, document_resolver.h serves the caches. Thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "cache_store/kvzip/document_prompts.h"
#include "cache_store/kvzip/head_profile.h"
#include "cache_store/store/document_store.h"
#include "documents/compression_jobs.h"
#include "documents/document_metrics.h"
#include "documents/document_resolver.h"
#include "documents/document_storage.h"
#include "documents/document_view.h"
#include "documents/document_writer.h"
#include "documents/documents_config.h"
#include "documents/request_workers.h"
#include "documents/upload_plan.h"
#include "documents/usage_ledger.h"
#include "engine/served_model.h"
#include "scheduler/scheduler.h"

namespace kvd::documents {

struct DocumentStats {
  int64_t documents = 0;     // stored, every tenant, processing or ready (not failed)
  int64_t stored_bytes = 0;  // encoded payloads
  std::map<std::string, TenantDocuments> tenants;
  int64_t compressions_running = 0;
  cache_store::TierStats tier;
  std::optional<cache_store::RemoteStoreStats> remote;  // with a shared tier
  DocumentMetricsSnapshot metrics;
};

class DocumentService {
 public:
  // What the service borrows; everything must outlive it.
  struct Dependencies {
    scheduler::Scheduler* scheduler = nullptr;
    engine::ServedModel model;
    std::filesystem::path model_dir;
    std::string kv_dtype;  // the dtype KV caches are computed in, part of their identity
  };

  // Opens (or creates) the store in `store.data_dir`/documents (writes synced as
  // store.sync_writes says) and, with store.remote, the shared tier (connected on first use),
  // fingerprints the model, marks documents a previous process left processing as failed, and
  // starts the writer. New ids carry `store.replica`; without a shared tier, other replicas'
  // ids are misdirected. Errors: the store's, the fingerprint's, InvalidArgument
  // for a framing the model cannot have (document_framing_config.h), a chat template that
  // cannot hold a document in `config.chat_role`, or a documents.head_profile that is not this
  // model's (head_profiles.h).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<DocumentService>> Open(
      const DocumentsConfig& config, const StoreConfig& store, Dependencies deps);
  ~DocumentService();
  DocumentService(const DocumentService&) = delete;
  DocumentService& operator=(const DocumentService&) = delete;

  const cache_store::DocumentFraming& framing() const { return framing_; }
  const std::string& replica() const { return replica_; }
  const DocumentsConfig& config() const { return config_; }

  using UploadCallback = DocumentWriter::UploadCallback;
  // Never blocks: the upload is checked, tokenized and written on a request worker, and `done`
  // runs once, on a documents thread, with the document as it is when the compression ends or
  // documents.upload_wait_seconds have passed, whichever is first (ready, processing or
  // failed); or with the error of a refused upload: InvalidArgument for a bad upload (code
  // request_too_large: the text or its cache alone exceeds a limit), ResourceExhausted over the
  // tenant's quota, Unavailable while shutting down.
  void Upload(const std::string& tenant, const DocumentQuota& quota, DocumentUpload upload,
              UploadCallback done);
  // NotFound (code document_not_found) for another tenant's document exactly as for a missing
  // one, and (except to Delete) for a document from its expiry on: the sweep deletes it later.
  // Without a shared tier, every call that takes an id answers FailedPrecondition with code
  // misdirected_request (HTTP 421) when the id names another replica than this one: the gateway
  // sent it to the wrong place. With one, calls that write answer Unavailable with a retry hint
  // while it cannot be reached (code shared_tier_unavailable).
  [[nodiscard]] absl::StatusOr<DocumentView> Get(const std::string& tenant,
                                                 const std::string& id) const;
  [[nodiscard]] absl::StatusOr<DocumentViewPage> List(const std::string& tenant,
                                                      const std::string& page_token,
                                                      int32_t limit) const;
  // Deletes the document, cancelling its compression if one runs.
  [[nodiscard]] absl::Status Delete(const std::string& tenant, const std::string& id);
  // Keeps another fraction (or token budget) of a ready document from its stored scores,
  // without rescoring. InvalidArgument when it would grow a cache stored without keep_full
  // or the method has no scores; FailedPrecondition when the document is not ready.
  [[nodiscard]] absl::StatusOr<DocumentView> Recut(const std::string& tenant, const std::string& id,
                                                   std::optional<double> ratio,
                                                   std::optional<int64_t> budget_tokens);
  using ResolveCallback = std::function<void(absl::StatusOr<ResolvedDocument>)>;
  // The cache a request continues: from the memory tier, or read, checked and kept there, on a
  // request worker, never blocking the caller. `done` runs once, there: NotFound as Get;
  // FailedPrecondition when not ready or computed by another model or pipeline; DataLoss when
  // the stored cache is corrupt; Unavailable while shutting down (then at once).
  void Resolve(const std::string& tenant, const std::string& id, ResolveCallback done);

  // Runs `task` on a request worker, never on the caller's thread; false, and `task` dropped,
  // while shutting down. For callers whose whole handling of a request touches the store
  // (Get, List, Delete, Recut), so that their I/O threads never wait on it.
  bool Post(std::function<void()> task);

  // Refuses new uploads and resolves, finishes those already posted, cancels running
  // compressions (their documents end failed), waits for the writer to store what it has, and
  // flushes the store. Idempotent.
  void Shutdown();
  DocumentStats Stats() const;

 private:
  DocumentService(const DocumentsConfig& config, cache_store::DocumentFraming framing,
                  std::string replica, Dependencies deps,
                  std::unique_ptr<DocumentStorage> storage,
                  engine::CacheFingerprint fingerprint, cache_store::DocumentPrompts prompts,
                  std::optional<cache_store::HeadProfile> head_profile,
                  std::string template_prefix);

  // Plans, reserves the quota, stores the processing meta and submits the compression.
  absl::StatusOr<std::shared_ptr<CompressionJob>> StartUpload(const std::string& tenant,
                                                              const DocumentQuota& quota,
                                                              DocumentUpload upload);
  absl::Status CheckReplica(const std::string& id) const;
  // The tenant's stored document `id`: NotFound (code document_not_found) when it has none;
  // LiveMeta also when it has expired.
  absl::StatusOr<cache_store::DocumentMeta> StoredMeta(const std::string& tenant,
                                                       const std::string& id) const;
  absl::StatusOr<cache_store::DocumentMeta> LiveMeta(const std::string& tenant,
                                                     const std::string& id) const;
  absl::StatusOr<ResolvedDocument> ResolveNow(const std::string& tenant, const std::string& id);

  const DocumentsConfig config_;
  const cache_store::DocumentFraming framing_;
  const std::string replica_;  // store.replica
  const Dependencies deps_;
  const std::unique_ptr<DocumentStorage> storage_;
  const cache_store::DocumentPrompts prompts_;
  const std::optional<cache_store::HeadProfile> head_profile_;  // documents.head_profile
  DocumentMetrics metrics_;
  UsageLedger usage_;
  CompressionJobs jobs_;
  DocumentResolver resolver_;
  std::unique_ptr<DocumentWriter> writer_;  // started after the parts it borrows
  RequestWorkers workers_;                  // stopped first
};

}  // namespace kvd::documents
