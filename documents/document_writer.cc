#include "documents/document_writer.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/time/clock.h"
#include "spdlog/spdlog.h"

namespace kvd::documents {

using cache_store::DocumentMeta;
using cache_store::DocumentPayload;
using cache_store::DocumentStatus;

void MarkFailed(DocumentMeta& meta, std::string reason, absl::Time now, double retention_seconds) {
  meta.status = DocumentStatus::kFailed;
  meta.failure_reason = std::move(reason);
  meta.expires = std::min(meta.expires, now + absl::Seconds(retention_seconds));
}

absl::StatusOr<StoredDocuments> CountStored(cache_store::DocumentStore& store) {
  StoredDocuments stored;
  auto unreadable = store.ForEachMeta([&](const DocumentMeta& meta) {
    if (meta.status == DocumentStatus::kFailed || meta.home == cache_store::DocumentHome::kCopy) {
      return;
    }
    TenantDocuments& tenant = stored.usage[meta.tenant];
    ++tenant.documents;
    tenant.bytes += meta.stored_bytes;
    if (meta.status == DocumentStatus::kProcessing) stored.processing.insert(meta.id);
  });
  if (!unreadable.ok()) return unreadable.status();
  return stored;
}

DocumentWriter::DocumentWriter(Parts parts) : parts_(std::move(parts)) {
  thread_ = std::thread([this] { Run(); });
}

DocumentWriter::~DocumentWriter() { Stop(); }

void DocumentWriter::Watch(const std::shared_ptr<CompressionJob>& job) {
  // Weakly: the job holds the handle that holds this listener.
  job->handle.SetListener([inbox = inbox_, weak = std::weak_ptr<CompressionJob>(job)] {
    std::shared_ptr<CompressionJob> finished = weak.lock();
    if (finished == nullptr) return;
    {
      base::MutexLock lock(inbox->mu);
      inbox->finished.push_back(std::move(finished));
    }
    inbox->cv.notify_all();
  });
}

void DocumentWriter::Await(std::shared_ptr<CompressionJob> job, absl::Time deadline,
                           UploadCallback done) {
  {
    base::MutexLock lock(inbox_->mu);
    inbox_->waiters.push_back({std::move(job), deadline, std::move(done)});
  }
  inbox_->cv.notify_all();
}

void DocumentWriter::Stop() {
  inbox_->cv.notify_all();
  if (thread_.joinable()) thread_.join();
}

void DocumentWriter::AnswerWaiters(bool all) {
  std::vector<Waiter> due;
  {
    base::MutexLock lock(inbox_->mu);
    const absl::Time now = absl::Now();
    std::vector<Waiter> waiting;
    for (Waiter& waiter : inbox_->waiters) {
      const bool ready = all || parts_.jobs->Finished(*waiter.job) || waiter.deadline <= now;
      (ready ? due : waiting).push_back(std::move(waiter));
    }
    inbox_->waiters = std::move(waiting);
  }
  for (Waiter& waiter : due) {
    if (!waiter.job->store_error.ok()) {
      waiter.done(waiter.job->store_error);
    } else {
      waiter.done(parts_.view_of(waiter.job->meta.tenant, waiter.job->meta.id));
    }
  }
}

absl::Time DocumentWriter::NextWake(absl::Time next_sweep) const {
  absl::Time wake = next_sweep;
  for (const Waiter& waiter : inbox_->waiters) wake = std::min(wake, waiter.deadline);
  return wake;
}

void DocumentWriter::Run() {
  const absl::Duration sweep_period = absl::Seconds(parts_.config->expiry_sweep_seconds);
  absl::Time next_sweep = absl::Now() + sweep_period;
  while (true) {
    std::deque<std::shared_ptr<CompressionJob>> finished;
    {
      base::MutexLock lock(inbox_->mu);
      const absl::Time wake = NextWake(next_sweep);
      while (inbox_->finished.empty() && absl::Now() < NextWake(next_sweep) &&
             !parts_.jobs->StoppedAndIdle()) {
        if (!lock.WaitUntil(inbox_->cv, wake)) break;
      }
      finished.swap(inbox_->finished);
    }
    for (const auto& job : finished) Persist(*job);
    AnswerWaiters(/*all=*/false);
    if (absl::Now() >= next_sweep) {
      next_sweep = absl::Now() + sweep_period;
      Sweep();
    }
    if (parts_.jobs->StoppedAndIdle()) break;
  }
  AnswerWaiters(/*all=*/true);  // uploads still waiting learn how their documents ended
}

void DocumentWriter::Sweep() {
  // The shared tier's copies expire there on their own (their keys carry the expiry).
  absl::StatusOr<int64_t> removed = parts_.storage->local().DeleteExpired(absl::Now());
  if (!removed.ok()) {
    spdlog::error("documents: expiry sweep failed: {}", removed.status().ToString());
  } else if (*removed > 0) {
    spdlog::info("documents: {} expired documents deleted", *removed);
  }
  if (absl::StatusOr<int64_t> dropped = parts_.storage->DropStaleCopies(); !dropped.ok()) {
    spdlog::warn("documents: cannot check copies against the shared tier: {}",
                 dropped.status().ToString());
  } else if (*dropped > 0) {
    spdlog::info("documents: {} copies the shared tier no longer holds dropped", *dropped);
  }
  absl::StatusOr<StoredDocuments> stored = CountStored(parts_.storage->local());
  if (!stored.ok()) {
    spdlog::error("documents: recount failed: {}", stored.status().ToString());
    return;
  }
  parts_.usage->Recount(*std::move(stored));
}

void DocumentWriter::Persist(CompressionJob& job) {
  DocumentStorage& storage = *parts_.storage;
  DocumentMeta meta = job.meta;
  std::optional<absl::StatusOr<DocumentPayload>> result =
      job.handle.TakeResult(absl::ZeroDuration());
  absl::StatusOr<DocumentPayload> payload =
      result ? *std::move(result) : absl::InternalError("the compression ended without a result");
  // Deleted here while it ran, or on another replica (the shared tier no longer has it).
  bool deleted_elsewhere = false;
  const auto deleted = [&] { return deleted_elsewhere || parts_.jobs->Deleted(job); };
  int64_t stored_bytes = 0;
  if (!deleted() && payload.ok()) {
    meta.status = DocumentStatus::kReady;
    if (absl::Status status = storage.Put(meta, *payload); absl::IsNotFound(status)) {
      deleted_elsewhere = true;
      if (auto removed = storage.local().Delete(meta.tenant, meta.id);
          !removed.ok() && !absl::IsNotFound(removed)) {
        spdlog::error("document {}: cannot delete it: {}", meta.id, removed.ToString());
      }
    } else if (!status.ok()) {
      if (absl::IsUnavailable(status)) job.store_error = status;
      payload = status;
    } else if (deleted()) {
      // Deleted while being written: the delete wins.
      if (auto removed = storage.Delete(meta.tenant, meta.id); !removed.ok()) {
        spdlog::error("document {}: cannot delete it: {}", meta.id, removed.ToString());
      }
    } else {
      absl::StatusOr<DocumentMeta> written = storage.local().GetMeta(meta.tenant, meta.id);
      stored_bytes = written.ok() ? written->stored_bytes : 0;
      // The payload stays ok(); only its contents move on to the tier.
      absl::StatusOr<DocumentPayload> served = DocumentResolver::Served(meta, *std::move(payload));
      if (served.ok()) parts_.resolver->Keep(meta, *std::move(served));
    }
  }
  if (!deleted() && !payload.ok()) {
    MarkFailed(meta, std::string(payload.status().message()), absl::Now(),
               parts_.config->failed_retention_seconds);
    if (auto status = storage.PutFailedMeta(meta); !status.ok()) {
      spdlog::error("document {}: cannot record its failure: {}", meta.id, status.ToString());
    }
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - job.started);
  if (deleted()) {
    spdlog::info("document {} deleted while compressing", meta.id);
    // A delete on this replica released the reservation; one on another cannot.
    if (deleted_elsewhere) parts_.usage->Release(meta.id);
  } else if (payload.ok()) {
    spdlog::info("document {} ready: {} bytes, ratio {:.3f}, {:.3f}s", meta.id, stored_bytes,
                 meta.identity.ratio, seconds);
    parts_.usage->Settle(meta.id, stored_bytes);
    parts_.metrics->ObserveCompression(seconds, meta.identity.ratio);
  } else {
    spdlog::warn("document {} failed: {}", meta.id, meta.failure_reason);
    // A failed document stays listed until its retention passes but no longer counts.
    parts_.usage->Release(meta.id);
    parts_.metrics->CountFailure();
  }
  parts_.jobs->Finish(job);
}

}  // namespace kvd::documents
