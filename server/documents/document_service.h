// Upload-once documents: compression through the scheduler, persistence in the document
// store, the memory tier, quotas, re-cuts and expiry. The HTTP and gRPC handlers both go
// through it, so documents are validated, authorised and mapped to statuses in one place.
// Thread-safe; store writes happen on its own worker thread, never on the scheduler thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "cache_store/kvzip/compression_spec.h"
#include "cache_store/kvzip/document_prompts.h"
#include "cache_store/store/document_store.h"
#include "nlohmann/json.hpp"
#include "scheduler/metrics.h"
#include "scheduler/scheduler.h"
#include "server/api/completion_params.h"
#include "server/auth/tenants.h"
#include "server/config/server_config.h"
#include "server/documents/cache_fingerprint.h"
#include "server/documents/document_tier.h"

namespace kvd::server {

struct DocumentUpload {
  std::string text;
  cache_store::CompressionSpec compression;
  // Store every entry and cut the served cache from it, so a later re-cut may grow.
  bool keep_full = false;
  std::optional<absl::Duration> ttl;  // unset: documents.default_ttl_seconds
  nlohmann::json metadata = nlohmann::json::object();
};

// A tenant's document limits; 0 means unlimited.
struct DocumentQuota {
  int64_t max_documents = 0;
  int64_t max_bytes = 0;
};

// What the API reports about one document.
struct DocumentView {
  cache_store::DocumentMeta meta;
  double progress = 1.0;  // while processing: the fraction of the compression done
};

struct DocumentViewPage {
  std::vector<DocumentView> documents;
  std::string next_page_token;  // empty on the last page
};

// A ready document as a request uses it.
struct ResolvedDocument {
  scheduler::DocumentPrefix prefix;
  std::string text;  // the document's own text, for placing it in a chat
};

// What counts against a tenant's quota: its processing and ready documents.
struct TenantDocuments {
  int64_t documents = 0;
  int64_t bytes = 0;
};

struct DocumentStats {
  int64_t documents = 0;     // stored, every tenant, processing or ready (not failed)
  int64_t stored_bytes = 0;  // encoded payloads
  std::map<std::string, TenantDocuments> tenants;
  int64_t compressions_running = 0;
  int64_t compressions_failed = 0;
  TierStats tier;
  base::HistogramSnapshot compression_seconds;  // upload to stored, per document
  base::HistogramSnapshot load_seconds;         // store read on a tier miss
  base::HistogramSnapshot kept_ratio;           // ratio of each stored document
};

class DocumentService {
 public:
  // What the service borrows; everything must outlive it.
  struct Dependencies {
    scheduler::Scheduler* scheduler = nullptr;
    ModelInfo model;
    std::filesystem::path model_dir;
    std::string kv_dtype;  // the dtype KV caches are computed in, part of their identity
  };

  // Opens (or creates) the store in `store.data_dir`/documents (writes synced as
  // store.sync_writes says), fingerprints the model, marks documents a previous process left
  // processing as failed, and starts the worker. New ids carry `store.replica`; other
  // replicas' ids are misdirected. Errors: the store's, the fingerprint's, InvalidArgument
  // when the chat template cannot hold a document in `config.chat_role`.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<DocumentService>> Open(
      const DocumentsConfig& config, const StoreConfig& store, Dependencies deps);
  ~DocumentService();
  DocumentService(const DocumentService&) = delete;
  DocumentService& operator=(const DocumentService&) = delete;

  engine::DocumentRole role() const { return role_; }
  // A tenant's limits: its own max_documents / max_stored_bytes, else the configured defaults.
  // Processing and ready documents count against them; failed ones do not.
  DocumentQuota QuotaOf(Tenant& tenant) const;
  const std::string& replica() const { return replica_; }
  const DocumentsConfig& config() const { return config_; }

  using UploadCallback = std::function<void(absl::StatusOr<DocumentView>)>;
  // Starts compressing and never blocks: `done` runs once, with the document as it is when
  // the compression ends or documents.upload_wait_seconds have passed, whichever is first
  // (ready, processing or failed), on the service's worker thread; or at once, on the
  // caller's thread, with the error of a refused upload: InvalidArgument for a bad upload
  // (code request_too_large: the text or its cache alone exceeds a limit), ResourceExhausted
  // over the tenant's quota, Unavailable while shutting down.
  void Upload(const std::string& tenant, const DocumentQuota& quota, DocumentUpload upload,
              UploadCallback done);
  // NotFound for another tenant's document exactly as for a missing one. Every call that
  // takes an id answers FailedPrecondition with code misdirected_request (HTTP 421) when the id
  // names another replica than this one: the gateway sent it to the wrong place.
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
  // The cache a request continues: from the memory tier, or read, checked and kept there.
  // NotFound as Get; FailedPrecondition when not ready or computed by another model or
  // pipeline; DataLoss when the stored cache is corrupt.
  [[nodiscard]] absl::StatusOr<ResolvedDocument> Resolve(const std::string& tenant,
                                                         const std::string& id);

  // Refuses new uploads, cancels running compressions (their documents end failed), waits
  // for the worker to write what it has, and flushes the store. Idempotent.
  void Shutdown();
  DocumentStats Stats() const;

 private:
  struct Job;
  using Usage = TenantDocuments;
  DocumentService(const DocumentsConfig& config, engine::DocumentRole role, std::string replica,
                  Dependencies deps, std::unique_ptr<cache_store::DocumentStore> store,
                  CacheFingerprint fingerprint, cache_store::DocumentPrompts prompts,
                  std::string template_prefix);

  // An upload that waits for its compression to end or its wait to pass.
  struct Waiter {
    std::shared_ptr<Job> job;
    absl::Time deadline;
    UploadCallback done;
  };
  // Checks, tokenizes, reserves the quota, stores the processing meta and submits the work.
  absl::StatusOr<std::shared_ptr<Job>> StartUpload(const std::string& tenant,
                                                   const DocumentQuota& quota,
                                                   DocumentUpload upload);
  // Answers the waiters whose job ended or whose wait passed (every one with `all`).
  void AnswerWaiters(bool all);
  // When the worker must wake next: the sweep or a waiter's deadline.
  absl::Time NextWake(absl::Time next_sweep) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(inbox_->mu);
  // Stop was asked and no upload is still running.
  bool StoppedAndIdle() const ABSL_LOCKS_EXCLUDED(mu_);
  cache_store::CacheIdentity Identity(const std::string& method, double ratio) const;
  absl::Status CheckReplica(const std::string& id) const;
  // The stored payload of a ready document (all entries when keep_full).
  absl::StatusOr<cache_store::DocumentPayload> ReadPayload(const cache_store::DocumentMeta& meta);
  // The payload a request is served: the stored one, cut to meta.ratio when keep_full.
  absl::StatusOr<cache_store::DocumentPayload> ServedPayload(
      const cache_store::DocumentMeta& meta, cache_store::DocumentPayload stored) const;
  // Marks `meta` failed for `reason`, to be swept documents.failed_retention_seconds after
  // `now` (or at its own expiry, if sooner).
  void MarkFailed(cache_store::DocumentMeta& meta, std::string reason, absl::Time now) const;
  // Counts every stored document that is not failed again (after expiry sweeps and at start).
  absl::Status Recount();
  void RunWorker();
  void Persist(Job& job);

  const DocumentsConfig config_;
  const engine::DocumentRole role_;
  const std::string replica_;  // store.replica
  const Dependencies deps_;
  const std::unique_ptr<cache_store::DocumentStore> store_;
  const CacheFingerprint fingerprint_;
  const cache_store::DocumentPrompts prompts_;
  const std::string template_prefix_;  // the rendered text before any document
  DocumentTier tier_;

  // Shared with the scheduler's completion listeners, which may outlive the service.
  struct Inbox {
    base::Mutex mu;
    std::condition_variable cv;
    std::deque<std::shared_ptr<Job>> finished ABSL_GUARDED_BY(mu);
  };
  const std::shared_ptr<Inbox> inbox_ = std::make_shared<Inbox>();
  std::vector<Waiter> waiters_ ABSL_GUARDED_BY(inbox_->mu);

  mutable base::Mutex mu_;
  std::map<std::string, std::shared_ptr<Job>> jobs_ ABSL_GUARDED_BY(mu_);  // by tenant and id
  std::map<std::string, Usage> usage_ ABSL_GUARDED_BY(mu_);                // by tenant
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t compressions_failed_ ABSL_GUARDED_BY(mu_) = 0;
  base::Histogram compression_seconds_ ABSL_GUARDED_BY(mu_);
  base::Histogram load_seconds_ ABSL_GUARDED_BY(mu_);
  base::Histogram kept_ratio_ ABSL_GUARDED_BY(mu_);
  std::thread worker_;
};

}  // namespace kvd::server
