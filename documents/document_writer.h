// The documents' worker thread: it stores each finished compression (ready, or failed with
// its reason), answers the uploads waiting for one, and sweeps expired documents. Store
// writes happen here, never on the scheduler thread or an I/O thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "cache_store/store/document_store.h"
#include "documents/document_storage.h"
#include "documents/compression_jobs.h"
#include "documents/document_metrics.h"
#include "documents/document_resolver.h"
#include "documents/document_view.h"
#include "documents/documents_config.h"
#include "documents/usage_ledger.h"

namespace kvd::documents {

// Marks `meta` failed for `reason`, to be swept `retention_seconds` after `now` (or at its own
// expiry, if sooner).
void MarkFailed(cache_store::DocumentMeta& meta, std::string reason, absl::Time now,
                double retention_seconds);

// Each tenant's documents in `store` that are not failed, and their bytes; copies of the shared
// tier's documents count against the replica that stored them, not against this one.
absl::StatusOr<StoredDocuments> CountStored(cache_store::DocumentStore& store);

class DocumentWriter {
 public:
  using UploadCallback = std::function<void(absl::StatusOr<DocumentView>)>;
  // How an upload that waited learns how its document is now.
  using ViewOf =
      std::function<absl::StatusOr<DocumentView>(const std::string& tenant, const std::string& id)>;
  struct Parts {
    const DocumentsConfig* config = nullptr;
    DocumentStorage* storage = nullptr;
    CompressionJobs* jobs = nullptr;
    UsageLedger* usage = nullptr;
    DocumentResolver* resolver = nullptr;
    DocumentMetrics* metrics = nullptr;
    ViewOf view_of;
  };

  // Borrows every part, which must outlive it; starts the thread.
  explicit DocumentWriter(Parts parts);
  // Stop() if not yet.
  ~DocumentWriter();
  DocumentWriter(const DocumentWriter&) = delete;
  DocumentWriter& operator=(const DocumentWriter&) = delete;

  // Stores `job` once its compression ends. Call once, after it is in the jobs table.
  void Watch(const std::shared_ptr<CompressionJob>& job);
  // Runs `done` on this thread with the view of `job`'s document once its compression ended or
  // `deadline` passed, whichever is first.
  void Await(std::shared_ptr<CompressionJob> job, absl::Time deadline, UploadCallback done);
  // Returns once every job in the table (which must be stopping) is stored or failed and the
  // waiters are answered; idempotent.
  void Stop();

 private:
  struct Waiter {
    std::shared_ptr<CompressionJob> job;
    absl::Time deadline;
    UploadCallback done;
  };
  // Shared with the scheduler's completion listeners, which may outlive the writer.
  struct Inbox {
    base::Mutex mu;
    std::condition_variable cv;
    std::deque<std::shared_ptr<CompressionJob>> finished ABSL_GUARDED_BY(mu);
    std::vector<Waiter> waiters ABSL_GUARDED_BY(mu);
  };

  void Run();
  void Persist(CompressionJob& job);
  void Sweep();
  // Answers the waiters whose job ended or whose wait passed (every one with `all`).
  void AnswerWaiters(bool all);
  // When the thread must wake next: the sweep or a waiter's deadline.
  absl::Time NextWake(absl::Time next_sweep) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(inbox_->mu);

  const Parts parts_;
  const std::shared_ptr<Inbox> inbox_ = std::make_shared<Inbox>();
  std::thread thread_;
};

}  // namespace kvd::documents
