#include "documents/document_service.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_details.h"
#include "base/status_macros.h"
#include "cache_store/kvzip/recut.h"
#include "documents/document_framing_config.h"
#include "documents/head_profiles.h"
#include "documents/shared_tier.h"
#include "spdlog/spdlog.h"

namespace kvd::documents {
namespace {

// Threads for uploads' checks and first writes and for requests' document reads: two keep one
// slow read from delaying every other request's start.
constexpr int kRequestWorkers = 2;

absl::Status ShuttingDown() { return absl::UnavailableError("the server is shutting down"); }

// The shared tier store.remote configures; null without one.
absl::StatusOr<std::unique_ptr<cache_store::RemoteDocumentStore>> OpenRemoteTier(
    const RemoteTierConfig& config) {
  KVD_ASSIGN_OR_RETURN(std::optional<cache_store::RedisPoolOptions> pool,
                       SharedTierPoolOptions(config));
  if (!pool) return nullptr;
  const std::string where = SharedTierAddress(pool->endpoint);
  auto remote = std::make_unique<cache_store::RemoteDocumentStore>(cache_store::RemoteStoreOptions{
      .endpoint = std::move(pool->endpoint),
      .timeout = pool->timeout,
      .max_payload_bytes = static_cast<int64_t>(config.max_payload_bytes),
      .key_prefix = config.key_prefix,
      .processing_lease = absl::Seconds(config.processing_lease_seconds)});
  // Redis may start after kvd (a fresh deployment): an unreachable tier is a warning here and an
  // error of each write until it answers.
  if (absl::Status ping = remote->Ping(); !ping.ok()) {
    spdlog::warn("documents: the shared tier at {} does not answer yet: {}", where,
                 ping.ToString());
  } else {
    spdlog::info("documents: shared tier at {}", where);
  }
  return remote;
}

}  // namespace

using cache_store::CompressionMethod;
using cache_store::DocumentMeta;
using cache_store::DocumentPayload;
using cache_store::DocumentStatus;

absl::StatusOr<std::unique_ptr<DocumentService>> DocumentService::Open(
    const DocumentsConfig& config, const StoreConfig& store_config, Dependencies deps) {
  absl::StatusOr<cache_store::DocumentFraming> framing =
      ResolveDocumentFraming(config, deps.model.chat_template != nullptr);
  if (!framing.ok()) return framing.status();
  const cache_store::DocumentPipeline pipeline{&*framing, deps.model.chat_template,
                                               deps.model.tokenizer};
  absl::StatusOr<cache_store::DocumentPrompts> prompts =
      cache_store::PrepareDocumentPrompts(pipeline);
  absl::StatusOr<cache_store::DocumentInput> probe = cache_store::PrepareDocument(pipeline, "kvd");
  if (!prompts.ok() || !probe.ok()) {
    const absl::Status& status = prompts.ok() ? probe.status() : prompts.status();
    if (framing->kind == cache_store::FramingKind::kPlain) return status;
    return absl::InvalidArgumentError(
        absl::StrCat("the chat template cannot hold a document in the ", config.chat_role,
                     " turn (documents.chat_role): ", std::string(status.message())));
  }
  std::string template_prefix = probe->prefix_text.substr(0, probe->prefix_text.size() - 3);
  const absl::Time start = absl::Now();
  absl::StatusOr<engine::CacheFingerprint> fingerprint =
      engine::FingerprintModel(deps.model_dir, framing->IdentityParts());
  if (!fingerprint.ok()) return fingerprint.status();
  spdlog::info("documents: {} framing, model fingerprint {} in {:.3f}s",
               cache_store::FramingKindName(framing->kind), fingerprint->model_digest.substr(0, 16),
               absl::ToDoubleSeconds(absl::Now() - start));
  absl::StatusOr<std::optional<cache_store::HeadProfile>> head_profile =
      LoadHeadProfile(config.head_profile, *fingerprint, *deps.model.config);
  if (!head_profile.ok()) return head_profile.status();
  if (*head_profile) {
    spdlog::info("documents: KVzip head profile {} of {} samples ({} tokens)", config.head_profile,
                 (*head_profile)->samples, (*head_profile)->sample_tokens);
  }
  absl::StatusOr<std::unique_ptr<cache_store::DocumentStore>> store =
      cache_store::DocumentStore::Open(std::filesystem::path(store_config.data_dir) / "documents",
                                       {.sync_writes = store_config.sync_writes});
  if (!store.ok()) return store.status();
  absl::StatusOr<std::unique_ptr<cache_store::RemoteDocumentStore>> remote =
      OpenRemoteTier(store_config.remote);
  if (!remote.ok()) return remote.status();
  auto storage = std::make_unique<DocumentStorage>(*std::move(store), *std::move(remote));

  // A document a previous process was compressing will never finish: it fails, stays
  // listed for the retention period and counts against no quota.
  std::vector<DocumentMeta> abandoned;
  auto unreadable = storage->local().ForEachMeta([&](const DocumentMeta& meta) {
    if (meta.status == DocumentStatus::kProcessing) abandoned.push_back(meta);
  });
  if (!unreadable.ok()) return unreadable.status();
  if (*unreadable > 0) spdlog::warn("documents: {} stored metas are unreadable", *unreadable);
  const absl::Time now = absl::Now();
  for (DocumentMeta& meta : abandoned) {
    // With a shared tier the compression may have been stored there before the stop: then it
    // is ready, and this replica fetches its copy when asked.
    if (storage->shared()) {
      absl::StatusOr<DocumentMeta> shared = storage->GetMeta(meta.tenant, meta.id);
      if (shared.ok() && shared->status == DocumentStatus::kReady) {
        if (auto status = storage->local().Delete(meta.tenant, meta.id); !status.ok()) {
          return status;
        }
        continue;
      }
    }
    MarkFailed(meta, "the server stopped before the compression finished", now,
               config.failed_retention_seconds);
    if (auto status = storage->PutFailedMeta(meta); !status.ok()) return status;
  }
  if (!abandoned.empty()) {
    spdlog::warn("documents: {} compressions a previous process left unfinished marked failed",
                 abandoned.size());
  }
  absl::StatusOr<StoredDocuments> stored = CountStored(storage->local());
  if (!stored.ok()) return stored.status();

  std::unique_ptr<DocumentService> service(
      new DocumentService(config, *std::move(framing), store_config.replica, std::move(deps),
                          std::move(storage), *std::move(fingerprint), *std::move(prompts),
                          *std::move(head_profile), std::move(template_prefix)));
  service->usage_.Recount(*std::move(stored));
  DocumentService* raw = service.get();
  service->writer_ = std::make_unique<DocumentWriter>(
      DocumentWriter::Parts{.config = &raw->config_,
                            .storage = raw->storage_.get(),
                            .jobs = &raw->jobs_,
                            .usage = &raw->usage_,
                            .resolver = &raw->resolver_,
                            .metrics = &raw->metrics_,
                            .view_of = [raw](const std::string& tenant, const std::string& id) {
                              return raw->Get(tenant, id);
                            }});
  return service;
}

DocumentService::DocumentService(
    const DocumentsConfig& config, cache_store::DocumentFraming framing, std::string replica,
    Dependencies deps, std::unique_ptr<DocumentStorage> storage,
    engine::CacheFingerprint fingerprint, cache_store::DocumentPrompts prompts,
    std::optional<cache_store::HeadProfile> head_profile, std::string template_prefix)
    : config_(config),
      framing_(std::move(framing)),
      replica_(std::move(replica)),
      deps_(std::move(deps)),
      storage_(std::move(storage)),
      prompts_(std::move(prompts)),
      head_profile_(std::move(head_profile)),
      resolver_(storage_.get(), &metrics_, std::move(fingerprint), deps_.kv_dtype,
                head_profile_ ? head_profile_->Digest() : "", std::move(template_prefix),
                config.memory_tier_bytes),
      workers_(kRequestWorkers) {}

DocumentService::~DocumentService() { Shutdown(); }

absl::Status DocumentService::CheckReplica(const std::string& id) const {
  if (replica_.empty() || storage_->shared()) return absl::OkStatus();
  const std::string home = cache_store::DocumentStore::ReplicaOfDocumentId(id);
  if (home.empty() || home == replica_) return absl::OkStatus();
  return WithErrorCode(absl::FailedPreconditionError(absl::StrCat(
                           "document ", id, " lives on replica ", home, ", not on ", replica_,
                           "; send its requests with the header X-Kvd-Replica: ", home)),
                       "misdirected_request");
}

void DocumentService::Upload(const std::string& tenant, const DocumentQuota& quota,
                             DocumentUpload upload, UploadCallback done) {
  auto start = [this, tenant, quota, upload = std::move(upload), done]() mutable {
    absl::StatusOr<std::shared_ptr<CompressionJob>> job =
        StartUpload(tenant, quota, std::move(upload));
    if (!job.ok()) {
      done(job.status());
      return;
    }
    writer_->Await(*std::move(job), absl::Now() + absl::Seconds(config_.upload_wait_seconds),
                   std::move(done));
  };
  if (!workers_.Post(std::move(start))) done(ShuttingDown());
}

absl::StatusOr<std::shared_ptr<CompressionJob>> DocumentService::StartUpload(
    const std::string& tenant, const DocumentQuota& quota, DocumentUpload upload) {
  absl::StatusOr<UploadPlan> plan =
      PlanUpload(upload, config_, deps_.model,
                 {&framing_, &prompts_, head_profile_ ? &*head_profile_ : nullptr});
  if (!plan.ok()) return plan.status();

  auto job = std::make_shared<CompressionJob>();
  DocumentMeta& meta = job->meta;
  absl::StatusOr<std::string> id = cache_store::DocumentStore::NewDocumentId(replica_);
  if (!id.ok()) return id.status();
  meta.id = *id;
  meta.tenant = tenant;
  meta.status = DocumentStatus::kProcessing;
  meta.created = absl::Now();
  const absl::Duration ttl = upload.ttl ? *upload.ttl
                             : config_.default_ttl_seconds > 0
                                 ? absl::Seconds(config_.default_ttl_seconds)
                                 : absl::InfiniteDuration();
  meta.expires = ttl == absl::InfiniteDuration() ? absl::InfiniteFuture() : meta.created + ttl;
  meta.token_count = plan->token_count;
  meta.keep_full = upload.keep_full;
  meta.metadata = std::move(upload.metadata);
  meta.identity =
      resolver_.Identity(upload.compression.method, plan->kept_ratio, upload.compression.merge);
  meta.merge = upload.compression.merge;
  meta.storage = upload.compression.kv_dtype;
  job->started = meta.created;

  if (jobs_.stopping()) return ShuttingDown();
  if (const std::optional<int64_t> limit = storage_->RemoteLimit();
      limit && plan->estimated_bytes > *limit) {
    return WithParam(
        WithErrorCode(absl::InvalidArgumentError(absl::StrCat(
                          "the document's cache would take about ", plan->estimated_bytes,
                          " bytes, more than the shared tier's limit of ", *limit,
                          " (store.remote.max_payload_bytes)")),
                      "request_too_large"),
        "text");
  }
  if (auto status = usage_.Reserve(tenant, meta.id, quota, plan->estimated_bytes); !status.ok()) {
    return status;
  }
  if (auto status = storage_->PutMeta(meta); !status.ok()) {
    usage_.Release(meta.id);
    return status;
  }
  absl::StatusOr<scheduler::CompressionHandle> handle =
      deps_.scheduler->SubmitCompression(std::move(plan->compressor));
  absl::Status submitted = handle.ok() ? absl::OkStatus() : handle.status();
  if (handle.ok()) {
    job->handle = *std::move(handle);
    submitted = jobs_.Add(job);  // Unavailable when a shutdown began meanwhile
  }
  if (!submitted.ok()) {
    usage_.Release(meta.id);
    (void)storage_->Delete(tenant, meta.id);
    return submitted.code() == absl::StatusCode::kInvalidArgument ? WithParam(submitted, "text")
                                                                  : submitted;
  }
  // Only now may the result arrive: the job is registered and has its handle.
  writer_->Watch(job);
  spdlog::info("document {} tenant={} tokens={} method={} ratio={:.3f}: compressing", meta.id,
               tenant, meta.token_count, meta.identity.method, meta.identity.ratio);
  return job;
}

absl::StatusOr<DocumentMeta> DocumentService::StoredMeta(const std::string& tenant,
                                                         const std::string& id) const {
  absl::StatusOr<DocumentMeta> meta = storage_->GetMeta(tenant, id);
  if (absl::IsNotFound(meta.status())) return WithErrorCode(meta.status(), "document_not_found");
  return meta;
}

absl::StatusOr<DocumentMeta> DocumentService::LiveMeta(const std::string& tenant,
                                                       const std::string& id) const {
  absl::StatusOr<DocumentMeta> meta = StoredMeta(tenant, id);
  // Gone from its expiry on, for every read and question; the writer's sweep deletes it later.
  if (meta.ok() && meta->expires <= absl::Now()) {
    return WithErrorCode(absl::NotFoundError(absl::StrCat("document ", id, " not found")),
                         "document_not_found");
  }
  return meta;
}

absl::StatusOr<DocumentView> DocumentService::Get(const std::string& tenant,
                                                  const std::string& id) const {
  if (auto status = CheckReplica(id); !status.ok()) return status;
  if (auto running = jobs_.Running(tenant, id)) {
    return DocumentView{std::move(running->first), running->second};
  }
  absl::StatusOr<DocumentMeta> meta = LiveMeta(tenant, id);
  if (!meta.ok()) return meta.status();
  const double progress = meta->status == DocumentStatus::kReady ? 1.0 : 0.0;
  return DocumentView{*std::move(meta), progress};
}

absl::StatusOr<DocumentViewPage> DocumentService::List(const std::string& tenant,
                                                       const std::string& page_token,
                                                       int32_t limit) const {
  absl::StatusOr<cache_store::DocumentPage> page = storage_->List(tenant, page_token, limit);
  if (!page.ok()) return page.status();
  DocumentViewPage views;
  views.next_page_token = page->next_page_token;
  const absl::Time now = absl::Now();
  for (DocumentMeta& meta : page->documents) {
    if (meta.expires <= now) continue;  // gone, as Get says
    double progress = meta.status == DocumentStatus::kReady ? 1.0 : 0.0;
    if (auto running = jobs_.Progress(tenant, meta.id)) progress = *running;
    views.documents.push_back({std::move(meta), progress});
  }
  return views;
}

absl::Status DocumentService::Delete(const std::string& tenant, const std::string& id) {
  if (auto status = CheckReplica(id); !status.ok()) return status;
  // An expired document not swept yet is deleted too: its compression cancelled, its quota
  // freed at once.
  absl::StatusOr<DocumentMeta> meta = StoredMeta(tenant, id);
  if (!meta.ok()) return meta.status();
  // A running compression is cancelled and its reservation released; one the writer has
  // already stored is a stored document like any other.
  const bool released = jobs_.Delete(tenant, id) && usage_.Release(id);
  // What this replica's usage counts is its own store's meta, read now: a compression that
  // ended since the first read has changed it, and a copy of a shared document (or none)
  // counts nowhere here.
  const absl::StatusOr<DocumentMeta> counted = storage_->local().GetMeta(tenant, id);
  if (auto status = storage_->Delete(tenant, id); !status.ok()) return status;
  resolver_.Forget(tenant, id);
  if (!released && counted.ok() && counted->status != DocumentStatus::kFailed &&
      counted->home != cache_store::DocumentHome::kCopy) {
    usage_.Remove(tenant, counted->stored_bytes);
  }
  return absl::OkStatus();
}

absl::StatusOr<DocumentView> DocumentService::Recut(const std::string& tenant,
                                                    const std::string& id,
                                                    std::optional<double> ratio,
                                                    std::optional<int64_t> budget_tokens) {
  if (auto status = CheckReplica(id); !status.ok()) return status;
  absl::StatusOr<DocumentMeta> meta = LiveMeta(tenant, id);
  if (!meta.ok()) return meta.status();
  if (meta->status != DocumentStatus::kReady) {
    return absl::FailedPreconditionError(absl::StrCat("document ", id, " is ",
                                                      cache_store::DocumentStatusName(meta->status),
                                                      "; only a ready document can be re-cut"));
  }
  absl::StatusOr<CompressionMethod> method =
      cache_store::ParseCompressionMethod(meta->identity.method);
  if (!method.ok()) return method.status();
  cache_store::CompressionSpec spec{.method = *method, .budget_tokens = budget_tokens};
  if (ratio) spec.ratio = *ratio;
  if (*method == CompressionMethod::kNone) {
    return absl::InvalidArgumentError(
        "a document stored with method none has no scores to re-cut by");
  }
  if (auto status = spec.Validate(); !status.ok()) return WithParam(status, "ratio");
  absl::StatusOr<DocumentPayload> stored = resolver_.Read(*meta);
  if (!stored.ok()) return stored.status();
  const int64_t heads = int64_t{stored->num_layers} * stored->num_kv_heads;
  const int64_t document_entries = int64_t{cache_store::DocumentTokens(*stored)} * heads;
  const int64_t keep = spec.KeptEntries(document_entries, heads);
  DocumentMeta updated = *meta;
  updated.identity = resolver_.Identity(
      *method, static_cast<double>(keep) / static_cast<double>(document_entries), meta->merge);
  DocumentPayload next;
  if (meta->keep_full) {
    next = *std::move(stored);
  } else {
    absl::StatusOr<DocumentPayload> cut =
        cache_store::CutPayload(*stored, *method, keep, meta->merge);
    if (!cut.ok()) return WithParam(cut.status(), "ratio");
    next = *std::move(cut);
  }
  absl::StatusOr<DocumentPayload> served = DocumentResolver::Served(updated, next);
  if (!served.ok()) return served.status();
  const absl::StatusOr<DocumentMeta> counted = storage_->local().GetMeta(tenant, id);
  if (auto status = storage_->Put(updated, next); !status.ok()) return status;
  resolver_.Keep(updated, *std::move(served));
  absl::StatusOr<DocumentMeta> written = storage_->local().GetMeta(tenant, id);
  if (!written.ok()) return written.status();
  // Only what this replica counts changes its usage (a copy counts where it was uploaded).
  if (counted.ok() && counted->home != cache_store::DocumentHome::kCopy) {
    usage_.Resize(tenant, written->stored_bytes - counted->stored_bytes);
  }
  metrics_.ObserveRecut(written->identity.ratio);
  spdlog::info("document {} re-cut: ratio {:.3f} -> {:.3f}", id, meta->identity.ratio,
               written->identity.ratio);
  return DocumentView{*std::move(written), 1.0};
}

absl::StatusOr<ResolvedDocument> DocumentService::ResolveNow(const std::string& tenant,
                                                             const std::string& id) {
  absl::StatusOr<DocumentView> view = Get(tenant, id);
  if (!view.ok()) return view.status();
  const DocumentMeta& meta = view->meta;
  if (meta.status == DocumentStatus::kProcessing) {
    return absl::FailedPreconditionError(absl::StrCat("document ", id, " is still processing (",
                                                      static_cast<int>(view->progress * 100),
                                                      "% done); try again shortly"));
  }
  if (meta.status == DocumentStatus::kFailed) {
    return absl::FailedPreconditionError(
        absl::StrCat("document ", id, " failed: ", meta.failure_reason));
  }
  return resolver_.Resolve(meta);
}

void DocumentService::Resolve(const std::string& tenant, const std::string& id,
                              ResolveCallback done) {
  if (!workers_.Post([this, tenant, id, done] { done(ResolveNow(tenant, id)); })) {
    done(ShuttingDown());
  }
}

bool DocumentService::Post(std::function<void()> task) { return workers_.Post(std::move(task)); }

void DocumentService::Shutdown() {
  workers_.Stop();
  jobs_.Stop();
  if (writer_ != nullptr) writer_->Stop();
  if (auto status = storage_->local().Flush(); !status.ok()) {
    spdlog::error("documents: flushing the store failed: {}", status.ToString());
  }
}

DocumentStats DocumentService::Stats() const {
  DocumentStats stats;
  stats.tenants = usage_.Snapshot();
  for (const auto& [tenant, usage] : stats.tenants) {
    stats.documents += usage.documents;
    stats.stored_bytes += usage.bytes;
  }
  stats.compressions_running = jobs_.running();
  stats.tier = resolver_.TierStats();
  stats.remote = storage_->RemoteStats();
  stats.metrics = metrics_.Snapshot();
  return stats;
}

}  // namespace kvd::documents
