#include "server/documents/document_service.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/mutex.h"
#include "cache_store/kvzip/document_compressor.h"
#include "cache_store/kvzip/recut.h"
#include "server/http/error_response.h"
#include "spdlog/spdlog.h"

namespace kvd::server {
namespace {

using cache_store::CompressionMethod;
using cache_store::DocumentMeta;
using cache_store::DocumentPayload;
using cache_store::DocumentStatus;

std::string JobKey(const std::string& tenant, const std::string& id) { return tenant + "\n" + id; }

std::vector<double> SecondsBuckets() {
  return {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
}

std::vector<double> RatioBuckets() { return {0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 0.9, 1.0}; }

// Bytes a payload of `entries` kept entries and `scores` scores encodes to, roughly: what a
// quota is checked against before the compression runs.
int64_t EstimateBytes(int64_t entries, int64_t scores, int32_t head_dim) {
  return entries * (2 * int64_t{head_dim} * 4 + 8) + scores * 4;
}

absl::Status TooLarge(std::string message) {
  return WithErrorCode(absl::InvalidArgumentError(std::move(message)), "request_too_large");
}

}  // namespace

struct DocumentService::Job {
  DocumentMeta meta;  // as stored while processing
  scheduler::CompressionHandle handle;
  int64_t reserved_bytes = 0;  // counted against the quota until the real size is known
  absl::Time started;
  // Guarded by the service's mu_, which an annotation on a member of Job cannot name.
  bool finished = false;
  bool deleted = false;
};

absl::StatusOr<std::unique_ptr<DocumentService>> DocumentService::Open(
    const DocumentsConfig& config, const StoreConfig& store_config, Dependencies deps) {
  absl::StatusOr<engine::DocumentRole> role = engine::ParseDocumentRole(config.chat_role);
  if (!role.ok()) return role.status();
  if (deps.model.chat_template == nullptr) {
    return absl::InvalidArgumentError(
        "documents need a chat template; this model has none (set documents.enabled: false)");
  }
  absl::StatusOr<cache_store::DocumentPrompts> prompts =
      cache_store::PrepareDocumentPrompts(*deps.model.chat_template, *deps.model.tokenizer, *role);
  absl::StatusOr<cache_store::DocumentInput> probe =
      cache_store::PrepareDocument(*deps.model.chat_template, *deps.model.tokenizer, "kvd", *role);
  if (!prompts.ok() || !probe.ok()) {
    const absl::Status& status = prompts.ok() ? probe.status() : prompts.status();
    return absl::InvalidArgumentError(
        absl::StrCat("the chat template cannot hold a document in the ", config.chat_role,
                     " turn (documents.chat_role): ", std::string(status.message())));
  }
  std::string template_prefix = probe->prefix_text.substr(0, probe->prefix_text.size() - 3);
  const absl::Time start = absl::Now();
  absl::StatusOr<CacheFingerprint> fingerprint = FingerprintModel(deps.model_dir, *role);
  if (!fingerprint.ok()) return fingerprint.status();
  spdlog::info("documents: model fingerprint {} in {:.3f}s",
               fingerprint->model_digest.substr(0, 16), absl::ToDoubleSeconds(absl::Now() - start));
  absl::StatusOr<std::unique_ptr<cache_store::DocumentStore>> store =
      cache_store::DocumentStore::Open(std::filesystem::path(store_config.data_dir) / "documents",
                                       {.sync_writes = store_config.sync_writes});
  if (!store.ok()) return store.status();

  std::unique_ptr<DocumentService> service(new DocumentService(
      config, *role, store_config.replica, std::move(deps), *std::move(store),
      *std::move(fingerprint), *std::move(prompts), std::move(template_prefix)));
  // A document a previous process was compressing will never finish: it fails, stays
  // listed for the retention period and counts against no quota.
  std::vector<DocumentMeta> abandoned;
  auto unreadable = service->store_->ForEachMeta([&](const DocumentMeta& meta) {
    if (meta.status == DocumentStatus::kProcessing) abandoned.push_back(meta);
  });
  if (!unreadable.ok()) return unreadable.status();
  if (*unreadable > 0) spdlog::warn("documents: {} stored metas are unreadable", *unreadable);
  const absl::Time now = absl::Now();
  for (DocumentMeta& meta : abandoned) {
    service->MarkFailed(meta, "the server stopped before the compression finished", now);
    if (auto status = service->store_->PutMeta(meta); !status.ok()) return status;
  }
  if (!abandoned.empty()) {
    spdlog::warn("documents: {} compressions a previous process left unfinished marked failed",
                 abandoned.size());
  }
  if (auto status = service->Recount(); !status.ok()) return status;
  service->worker_ = std::thread([raw = service.get()] { raw->RunWorker(); });
  return service;
}

DocumentService::DocumentService(const DocumentsConfig& config, engine::DocumentRole role,
                                 std::string replica, Dependencies deps,
                                 std::unique_ptr<cache_store::DocumentStore> store,
                                 CacheFingerprint fingerprint, cache_store::DocumentPrompts prompts,
                                 std::string template_prefix)
    : config_(config),
      role_(role),
      replica_(std::move(replica)),
      deps_(std::move(deps)),
      store_(std::move(store)),
      fingerprint_(std::move(fingerprint)),
      prompts_(std::move(prompts)),
      template_prefix_(std::move(template_prefix)),
      tier_(config.memory_tier_bytes),
      compression_seconds_(SecondsBuckets()),
      load_seconds_(SecondsBuckets()),
      kept_ratio_(RatioBuckets()) {}

DocumentService::~DocumentService() { Shutdown(); }

DocumentQuota DocumentService::QuotaOf(Tenant& tenant) const {
  const int64_t documents = tenant.max_documents();
  const int64_t bytes = tenant.max_stored_bytes();
  return {documents > 0 ? documents : config_.max_documents_per_tenant,
          bytes > 0 ? bytes : static_cast<int64_t>(config_.max_stored_bytes_per_tenant)};
}

cache_store::CacheIdentity DocumentService::Identity(const std::string& method,
                                                     double ratio) const {
  absl::StatusOr<CompressionMethod> parsed = cache_store::ParseCompressionMethod(method);
  return cache_store::CacheIdentity{
      .model_digest = fingerprint_.model_digest,
      .tokenizer_digest = fingerprint_.tokenizer_digest,
      .kv_dtype = deps_.kv_dtype,
      .method = method,
      .method_version = parsed.ok() ? cache_store::CompressionMethodVersion(*parsed) : "unknown",
      .ratio = ratio};
}

absl::Status DocumentService::CheckReplica(const std::string& id) const {
  if (replica_.empty()) return absl::OkStatus();
  const std::string home = cache_store::DocumentStore::ReplicaOfDocumentId(id);
  if (home.empty() || home == replica_) return absl::OkStatus();
  return WithErrorCode(absl::FailedPreconditionError(absl::StrCat(
                           "document ", id, " lives on replica ", home, ", not on ", replica_,
                           "; send its requests with the header X-Kvd-Replica: ", home)),
                       "misdirected_request");
}

void DocumentService::MarkFailed(DocumentMeta& meta, std::string reason, absl::Time now) const {
  meta.status = DocumentStatus::kFailed;
  meta.failure_reason = std::move(reason);
  meta.expires = std::min(meta.expires, now + absl::Seconds(config_.failed_retention_seconds));
}

absl::Status DocumentService::Recount() {
  std::map<std::string, Usage> usage;
  auto unreadable = store_->ForEachMeta([&](const DocumentMeta& meta) {
    if (meta.status == DocumentStatus::kFailed) return;
    Usage& tenant = usage[meta.tenant];
    ++tenant.documents;
    tenant.bytes += meta.stored_bytes;
  });
  if (!unreadable.ok()) return unreadable.status();
  base::MutexLock lock(mu_);
  // Compressions in flight are not stored yet; they keep their reservations.
  for (const auto& [key, job] : jobs_) {
    if (job->finished || job->deleted) continue;
    usage[job->meta.tenant].bytes += job->reserved_bytes;
  }
  usage_ = std::move(usage);
  return absl::OkStatus();
}

void DocumentService::Upload(const std::string& tenant, const DocumentQuota& quota,
                             DocumentUpload upload, UploadCallback done) {
  absl::StatusOr<std::shared_ptr<Job>> job = StartUpload(tenant, quota, std::move(upload));
  if (!job.ok()) {
    done(job.status());
    return;
  }
  {
    base::MutexLock lock(inbox_->mu);
    waiters_.push_back(
        {*job, absl::Now() + absl::Seconds(config_.upload_wait_seconds), std::move(done)});
  }
  inbox_->cv.notify_all();
}

absl::StatusOr<std::shared_ptr<DocumentService::Job>> DocumentService::StartUpload(
    const std::string& tenant, const DocumentQuota& quota, DocumentUpload upload) {
  const engine::ModelConfig& model = *deps_.model.config;
  if (upload.text.empty()) {
    return WithParam(absl::InvalidArgumentError("'text' must be a non-empty string"), "text");
  }
  if (upload.text.size() > config_.max_document_bytes) {
    return WithParam(
        TooLarge(absl::StrCat("the document has ", upload.text.size(),
                              " bytes; this server accepts at most ", config_.max_document_bytes)),
        "text");
  }
  if (auto status = upload.compression.Validate(); !status.ok()) {
    return WithParam(status, "compression");
  }
  absl::StatusOr<cache_store::DocumentInput> input = cache_store::PrepareDocument(
      *deps_.model.chat_template, *deps_.model.tokenizer, upload.text, role_);
  if (!input.ok()) return WithParam(input.status(), "text");
  std::vector<int32_t> query;
  if (!upload.compression.query.empty()) {
    query = cache_store::QuestionTokens(*deps_.model.tokenizer, prompts_, upload.compression.query);
  }
  const cache_store::CompressionSpec asked = upload.compression;
  cache_store::CompressionSpec run = asked;
  if (upload.keep_full && run.method != CompressionMethod::kNone) {
    run.ratio = 1.0;
    run.budget_tokens.reset();
  }
  const int64_t heads = int64_t{model.num_layers} * model.num_kv_heads;
  const int64_t document_entries = static_cast<int64_t>(input->document_ids.size()) * heads;
  const int64_t kept = asked.KeptEntries(document_entries, heads);
  const int64_t stored_entries = static_cast<int64_t>(input->prefix_ids.size()) * heads +
                                 run.KeptEntries(document_entries, heads);
  const int64_t estimate =
      EstimateBytes(stored_entries, int64_t{input->length()} * heads, model.head_dim);
  auto compressor =
      cache_store::DocumentCompressor::Create(model, *input, prompts_, std::move(query), run);
  if (!compressor.ok()) return WithParam(compressor.status(), "text");

  auto job = std::make_shared<Job>();
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
  meta.token_count = input->length();
  meta.method = cache_store::CompressionMethodName(asked.method);
  meta.ratio = static_cast<double>(kept) / static_cast<double>(document_entries);
  meta.keep_full = upload.keep_full;
  meta.metadata = std::move(upload.metadata);
  meta.identity = Identity(meta.method, meta.ratio);
  job->reserved_bytes = estimate;
  job->started = meta.created;
  {
    base::MutexLock lock(mu_);
    if (stopping_) return absl::UnavailableError("the server is shutting down");
    Usage& usage = usage_[tenant];
    if (quota.max_documents > 0 && usage.documents >= quota.max_documents) {
      return WithRetryAfter(absl::ResourceExhaustedError(
                                absl::StrCat("tenant '", tenant, "' stores ", usage.documents,
                                             " documents, its limit; delete some first")),
                            60);
    }
    if (quota.max_bytes > 0 && estimate > quota.max_bytes) {
      return WithParam(TooLarge(absl::StrCat("this document's cache takes about ", estimate,
                                             " bytes, more than the tenant's ", quota.max_bytes,
                                             "; upload a smaller ratio")),
                       "compression");
    }
    if (quota.max_bytes > 0 && usage.bytes + estimate > quota.max_bytes) {
      return WithRetryAfter(
          absl::ResourceExhaustedError(absl::StrCat(
              "tenant '", tenant, "' stores ", usage.bytes,
              " bytes of documents; this one would pass its limit of ", quota.max_bytes)),
          60);
    }
    ++usage.documents;
    usage.bytes += estimate;
  }
  auto unreserve = [&] {
    base::MutexLock lock(mu_);
    Usage& usage = usage_[tenant];
    --usage.documents;
    usage.bytes -= estimate;
  };
  if (auto status = store_->PutMeta(meta); !status.ok()) {
    unreserve();
    return status;
  }
  absl::StatusOr<scheduler::CompressionHandle> handle =
      deps_.scheduler->SubmitCompression(*std::move(compressor));
  if (!handle.ok()) {
    unreserve();
    (void)store_->Delete(tenant, meta.id);
    return handle.status().code() == absl::StatusCode::kInvalidArgument
               ? WithParam(handle.status(), "text")
               : handle.status();
  }
  job->handle = *std::move(handle);
  {
    base::MutexLock lock(mu_);
    jobs_[JobKey(tenant, meta.id)] = job;
  }
  // Only now may the result arrive: the job is registered and has its handle.
  // Weakly: the job holds the handle that holds this listener.
  job->handle.SetListener([inbox = inbox_, weak = std::weak_ptr<Job>(job)] {
    std::shared_ptr<Job> finished = weak.lock();
    if (finished == nullptr) return;
    {
      base::MutexLock lock(inbox->mu);
      inbox->finished.push_back(std::move(finished));
    }
    inbox->cv.notify_all();
  });
  spdlog::info("document {} tenant={} tokens={} method={} ratio={:.3f}: compressing", meta.id,
               tenant, meta.token_count, meta.method, meta.ratio);
  return job;
}

void DocumentService::AnswerWaiters(bool all) {
  std::vector<Waiter> due;
  {
    base::MutexLock inbox(inbox_->mu);
    base::MutexLock state(mu_);
    const absl::Time now = absl::Now();
    auto ready = [&](const Waiter& waiter) {
      return all || waiter.job->finished || waiter.deadline <= now;
    };
    std::vector<Waiter> waiting;
    for (Waiter& waiter : waiters_) (ready(waiter) ? due : waiting).push_back(std::move(waiter));
    waiters_ = std::move(waiting);
  }
  for (Waiter& waiter : due) {
    waiter.done(Get(waiter.job->meta.tenant, waiter.job->meta.id));
  }
}

absl::Time DocumentService::NextWake(absl::Time next_sweep) const {
  absl::Time wake = next_sweep;
  for (const Waiter& waiter : waiters_) wake = std::min(wake, waiter.deadline);
  return wake;
}

bool DocumentService::StoppedAndIdle() const {
  base::MutexLock lock(mu_);
  return stopping_ && jobs_.empty();
}

void DocumentService::RunWorker() {
  absl::Time next_sweep = absl::Now() + absl::Seconds(config_.expiry_sweep_seconds);
  while (true) {
    std::deque<std::shared_ptr<Job>> finished;
    {
      base::MutexLock lock(inbox_->mu);
      const absl::Time wake = NextWake(next_sweep);
      while (inbox_->finished.empty() && absl::Now() < NextWake(next_sweep) && !StoppedAndIdle()) {
        if (!lock.WaitUntil(inbox_->cv, wake)) break;
      }
      finished.swap(inbox_->finished);
    }
    for (const auto& job : finished) Persist(*job);
    AnswerWaiters(/*all=*/false);
    if (absl::Now() >= next_sweep) {
      next_sweep = absl::Now() + absl::Seconds(config_.expiry_sweep_seconds);
      absl::StatusOr<int64_t> removed = store_->DeleteExpired(absl::Now());
      if (!removed.ok()) {
        spdlog::error("documents: expiry sweep failed: {}", removed.status().ToString());
      } else if (*removed > 0) {
        spdlog::info("documents: {} expired documents deleted", *removed);
      }
      if (auto status = Recount(); !status.ok()) {
        spdlog::error("documents: recount failed: {}", status.ToString());
      }
    }
    base::MutexLock lock(mu_);
    if (stopping_ && jobs_.empty()) break;
  }
  AnswerWaiters(/*all=*/true);  // uploads still waiting learn how their documents ended
}

void DocumentService::Persist(Job& job) {
  DocumentMeta meta = job.meta;
  std::optional<absl::StatusOr<DocumentPayload>> result =
      job.handle.TakeResult(absl::ZeroDuration());
  absl::StatusOr<DocumentPayload> payload =
      result ? *std::move(result) : absl::InternalError("the compression ended without a result");
  const auto deleted = [&] {
    base::MutexLock lock(mu_);
    return job.deleted;
  };
  int64_t stored_bytes = 0;
  if (!deleted() && payload.ok()) {
    meta.status = DocumentStatus::kReady;
    if (absl::Status status = store_->Put(meta, *payload); !status.ok()) {
      payload = status;
    } else if (deleted()) {
      // Deleted while being written: the delete wins.
      if (auto removed = store_->Delete(meta.tenant, meta.id); !removed.ok()) {
        spdlog::error("document {}: cannot delete it: {}", meta.id, removed.ToString());
      }
    } else {
      absl::StatusOr<DocumentMeta> stored = store_->GetMeta(meta.tenant, meta.id);
      stored_bytes = stored.ok() ? stored->stored_bytes : 0;
      // The payload stays ok(); only its contents move on to the tier.
      absl::StatusOr<DocumentPayload> served = ServedPayload(meta, *std::move(payload));
      if (served.ok()) {
        tier_.Put(meta.tenant, meta.id, meta.identity.Fingerprint(),
                  std::make_shared<const DocumentPayload>(*std::move(served)));
      }
    }
  }
  if (!deleted() && !payload.ok()) {
    MarkFailed(meta, std::string(payload.status().message()), absl::Now());
    if (auto status = store_->PutMeta(meta); !status.ok()) {
      spdlog::error("document {}: cannot record its failure: {}", meta.id, status.ToString());
    }
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - job.started);
  base::MutexLock lock(mu_);
  if (job.deleted) {
    spdlog::info("document {} deleted while compressing", meta.id);
  } else if (payload.ok()) {
    spdlog::info("document {} ready: {} bytes, ratio {:.3f}, {:.3f}s", meta.id, stored_bytes,
                 meta.ratio, seconds);
    usage_[meta.tenant].bytes += stored_bytes - job.reserved_bytes;
    compression_seconds_.Observe(seconds);
    kept_ratio_.Observe(meta.ratio);
  } else {
    spdlog::warn("document {} failed: {}", meta.id, meta.failure_reason);
    // A failed document stays listed until its retention passes but no longer counts.
    Usage& usage = usage_[meta.tenant];
    --usage.documents;
    usage.bytes -= job.reserved_bytes;
    ++compressions_failed_;
  }
  job.finished = true;
  jobs_.erase(JobKey(meta.tenant, meta.id));
}

absl::StatusOr<DocumentView> DocumentService::Get(const std::string& tenant,
                                                  const std::string& id) const {
  if (auto status = CheckReplica(id); !status.ok()) return status;
  {
    base::MutexLock lock(mu_);
    if (auto it = jobs_.find(JobKey(tenant, id)); it != jobs_.end() && !it->second->deleted) {
      return DocumentView{it->second->meta, it->second->handle.progress()};
    }
  }
  absl::StatusOr<DocumentMeta> meta = store_->GetMeta(tenant, id);
  if (!meta.ok()) return meta.status();
  const double progress = meta->status == DocumentStatus::kReady ? 1.0 : 0.0;
  return DocumentView{*std::move(meta), progress};
}

absl::StatusOr<DocumentViewPage> DocumentService::List(const std::string& tenant,
                                                       const std::string& page_token,
                                                       int32_t limit) const {
  absl::StatusOr<cache_store::DocumentPage> page = store_->List(tenant, page_token, limit);
  if (!page.ok()) return page.status();
  DocumentViewPage views;
  views.next_page_token = page->next_page_token;
  base::MutexLock lock(mu_);
  for (DocumentMeta& meta : page->documents) {
    double progress = meta.status == DocumentStatus::kReady ? 1.0 : 0.0;
    if (auto it = jobs_.find(JobKey(tenant, meta.id)); it != jobs_.end()) {
      progress = it->second->handle.progress();
    }
    views.documents.push_back({std::move(meta), progress});
  }
  return views;
}

absl::Status DocumentService::Delete(const std::string& tenant, const std::string& id) {
  if (auto status = CheckReplica(id); !status.ok()) return status;
  absl::StatusOr<DocumentMeta> meta = store_->GetMeta(tenant, id);
  if (!meta.ok()) return meta.status();
  bool compressing = false;
  {
    base::MutexLock lock(mu_);
    if (auto it = jobs_.find(JobKey(tenant, id)); it != jobs_.end() && !it->second->finished) {
      it->second->deleted = true;
      it->second->handle.Cancel();
      usage_[tenant].bytes -= it->second->reserved_bytes;
      compressing = true;
    }
  }
  // A compression that ended since the first read has changed the meta and the usage: count
  // what it left, not what it was.
  if (!compressing && meta->status == DocumentStatus::kProcessing) {
    meta = store_->GetMeta(tenant, id);
    if (!meta.ok()) return meta.status();
  }
  if (auto status = store_->Delete(tenant, id); !status.ok()) return status;
  tier_.Erase(tenant, id);
  if (!compressing && meta->status == DocumentStatus::kFailed) return absl::OkStatus();
  base::MutexLock lock(mu_);
  Usage& usage = usage_[tenant];
  --usage.documents;
  usage.bytes -= meta->stored_bytes;
  return absl::OkStatus();
}

absl::StatusOr<DocumentPayload> DocumentService::ReadPayload(const DocumentMeta& meta) {
  const absl::Time start = absl::Now();
  absl::StatusOr<DocumentPayload> payload =
      store_->GetPayload(meta.tenant, meta.id, Identity(meta.method, meta.ratio));
  if (payload.ok()) {
    base::MutexLock lock(mu_);
    load_seconds_.Observe(absl::ToDoubleSeconds(absl::Now() - start));
  }
  return payload;
}

absl::StatusOr<DocumentPayload> DocumentService::ServedPayload(const DocumentMeta& meta,
                                                               DocumentPayload stored) const {
  absl::StatusOr<CompressionMethod> method = cache_store::ParseCompressionMethod(meta.method);
  if (!method.ok()) return method.status();
  if (!meta.keep_full || *method == CompressionMethod::kNone) return stored;
  const int64_t heads = int64_t{stored.num_layers} * stored.num_kv_heads;
  const int64_t keep = std::llround(meta.ratio * cache_store::DocumentTokens(stored) * heads);
  return cache_store::CutPayload(stored, *method, keep);
}

absl::StatusOr<DocumentView> DocumentService::Recut(const std::string& tenant,
                                                    const std::string& id,
                                                    std::optional<double> ratio,
                                                    std::optional<int64_t> budget_tokens) {
  if (auto status = CheckReplica(id); !status.ok()) return status;
  absl::StatusOr<DocumentMeta> meta = store_->GetMeta(tenant, id);
  if (!meta.ok()) return meta.status();
  if (meta->status != DocumentStatus::kReady) {
    return absl::FailedPreconditionError(absl::StrCat("document ", id, " is ",
                                                      cache_store::DocumentStatusName(meta->status),
                                                      "; only a ready document can be re-cut"));
  }
  absl::StatusOr<CompressionMethod> method = cache_store::ParseCompressionMethod(meta->method);
  if (!method.ok()) return method.status();
  cache_store::CompressionSpec spec{.method = *method, .budget_tokens = budget_tokens};
  if (ratio) spec.ratio = *ratio;
  if (*method == CompressionMethod::kNone) {
    return absl::InvalidArgumentError(
        "a document stored with method none has no scores to re-cut by");
  }
  if (auto status = spec.Validate(); !status.ok()) return WithParam(status, "ratio");
  absl::StatusOr<DocumentPayload> stored = ReadPayload(*meta);
  if (!stored.ok()) return stored.status();
  const int64_t heads = int64_t{stored->num_layers} * stored->num_kv_heads;
  const int64_t document_entries = int64_t{cache_store::DocumentTokens(*stored)} * heads;
  const int64_t keep = spec.KeptEntries(document_entries, heads);
  DocumentMeta updated = *meta;
  updated.ratio = static_cast<double>(keep) / static_cast<double>(document_entries);
  updated.identity = Identity(updated.method, updated.ratio);
  DocumentPayload next;
  if (meta->keep_full) {
    next = *std::move(stored);
  } else {
    absl::StatusOr<DocumentPayload> cut = cache_store::CutPayload(*stored, *method, keep);
    if (!cut.ok()) return WithParam(cut.status(), "ratio");
    next = *std::move(cut);
  }
  absl::StatusOr<DocumentPayload> served = ServedPayload(updated, next);
  if (!served.ok()) return served.status();
  if (auto status = store_->Put(updated, next); !status.ok()) return status;
  tier_.Put(tenant, id, updated.identity.Fingerprint(),
            std::make_shared<const DocumentPayload>(*std::move(served)));
  absl::StatusOr<DocumentMeta> written = store_->GetMeta(tenant, id);
  if (!written.ok()) return written.status();
  {
    base::MutexLock lock(mu_);
    usage_[tenant].bytes += written->stored_bytes - meta->stored_bytes;
    kept_ratio_.Observe(written->ratio);
  }
  spdlog::info("document {} re-cut: ratio {:.3f} -> {:.3f}", id, meta->ratio, written->ratio);
  return DocumentView{*std::move(written), 1.0};
}

absl::StatusOr<ResolvedDocument> DocumentService::Resolve(const std::string& tenant,
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
  const std::string fingerprint = meta.identity.Fingerprint();
  std::shared_ptr<const DocumentPayload> payload = tier_.Get(tenant, id, fingerprint);
  if (payload == nullptr) {
    absl::StatusOr<DocumentPayload> stored = ReadPayload(meta);
    if (!stored.ok()) return stored.status();
    absl::StatusOr<DocumentPayload> served = ServedPayload(meta, *std::move(stored));
    if (!served.ok()) return served.status();
    payload = std::make_shared<const DocumentPayload>(*std::move(served));
    tier_.Put(tenant, id, fingerprint, payload);
  }
  if (!payload->prefix_text.starts_with(template_prefix_)) {
    return absl::FailedPreconditionError(
        absl::StrCat("document ", id, " was placed by another chat template; upload it again"));
  }
  ResolvedDocument resolved;
  resolved.text = payload->prefix_text.substr(template_prefix_.size());
  resolved.prefix = scheduler::DocumentPrefix{absl::StrCat(tenant, "/", id, "/", fingerprint),
                                              std::move(payload)};
  return resolved;
}

void DocumentService::Shutdown() {
  std::vector<std::shared_ptr<Job>> running;
  {
    base::MutexLock lock(mu_);
    if (stopping_ && !worker_.joinable()) return;
    stopping_ = true;
    for (const auto& [key, job] : jobs_) running.push_back(job);
  }
  for (const auto& job : running) job->handle.Cancel();
  inbox_->cv.notify_all();
  if (worker_.joinable()) worker_.join();
  if (auto status = store_->Flush(); !status.ok()) {
    spdlog::error("documents: flushing the store failed: {}", status.ToString());
  }
}

DocumentStats DocumentService::Stats() const {
  DocumentStats stats;
  stats.tier = tier_.Stats();
  base::MutexLock lock(mu_);
  for (const auto& [tenant, usage] : usage_) {
    stats.documents += usage.documents;
    stats.stored_bytes += usage.bytes;
  }
  stats.tenants = usage_;
  stats.compressions_running = static_cast<int64_t>(jobs_.size());
  stats.compressions_failed = compressions_failed_;
  stats.compression_seconds = compression_seconds_.snapshot();
  stats.load_seconds = load_seconds_.snapshot();
  stats.kept_ratio = kept_ratio_.snapshot();
  return stats;
}

}  // namespace kvd::server
