#include "documents/document_storage.h"

#include <algorithm>
#include <future>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_details.h"
#include "spdlog/spdlog.h"

namespace kvd::documents {
namespace {

using cache_store::DocumentMeta;
using cache_store::DocumentPayload;
using cache_store::DocumentHome;
using cache_store::DocumentStatus;

// Copies of shared documents queued for the local store at most; more are skipped.
constexpr size_t kMaxPendingCopies = 8;

// Seconds a client waits before retrying a write the shared tier could not take.
constexpr int kRetryAfterSeconds = 1;

// The shared tier's Unavailable as the client sees it; other errors as they are.
absl::Status FromSharedTier(absl::Status status) {
  if (status.code() != absl::StatusCode::kUnavailable) return status;
  return WithRetryAfter(
      WithErrorCode(absl::UnavailableError(absl::StrCat("the shared document tier is unavailable: ",
                                                        std::string(status.message()))),
                    "shared_tier_unavailable"),
      kRetryAfterSeconds);
}

bool Unreachable(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable;
}

}  // namespace

DocumentStorage::DocumentStorage(std::unique_ptr<cache_store::DocumentStore> local,
                                 std::unique_ptr<cache_store::RemoteDocumentStore> remote)
    : local_(std::move(local)), remote_(std::move(remote)) {}

absl::Status DocumentStorage::Put(DocumentMeta meta, const DocumentPayload& payload) {
  if (remote_ != nullptr) {
    meta.home = DocumentHome::kShared;
    if (absl::Status status = remote_->Put(meta, payload, /*must_exist=*/true); !status.ok()) {
      return FromSharedTier(status);
    }
    // The local copy keeps what it was: this replica's upload (kShared), counted against the
    // tenant here, or a copy (kCopy, also when there was none), counted by its uploader.
    absl::StatusOr<DocumentMeta> own = local_->GetMeta(meta.tenant, meta.id);
    meta.home = own.ok() ? own->home : DocumentHome::kCopy;
    AwaitCopies();  // a copy written after this would hide the new version
  }
  return local_->Put(std::move(meta), payload);
}

absl::Status DocumentStorage::PutMeta(DocumentMeta meta) {
  if (remote_ != nullptr) {
    meta.home = DocumentHome::kShared;
    if (absl::Status status = remote_->PutMeta(meta, /*must_exist=*/false); !status.ok()) {
      return FromSharedTier(status);
    }
  }
  return local_->PutMeta(meta);
}

absl::Status DocumentStorage::PutFailedMeta(DocumentMeta meta) {
  if (remote_ != nullptr) {
    meta.home = DocumentHome::kShared;
    const absl::Status status = remote_->PutMeta(meta, /*must_exist=*/true);
    if (absl::IsNotFound(status)) {
      // Deleted there meanwhile: nothing to record.
      if (absl::Status removed = local_->Delete(meta.tenant, meta.id);
          !removed.ok() && !absl::IsNotFound(removed)) {
        return removed;
      }
      return absl::OkStatus();
    }
    if (!status.ok()) {
      spdlog::warn("document {}: the shared tier did not take its failure: {}", meta.id,
                   status.ToString());
    }
  }
  return local_->PutMeta(meta);
}

absl::StatusOr<DocumentMeta> DocumentStorage::GetMeta(const std::string& tenant,
                                                      const std::string& id) {
  if (remote_ == nullptr) return local_->GetMeta(tenant, id);
  absl::StatusOr<DocumentMeta> shared = remote_->GetMeta(tenant, id);
  if (shared.ok() || (!Unreachable(shared.status()) && !absl::IsNotFound(shared.status()))) {
    return shared;
  }
  if (Unreachable(shared.status())) AwaitCopies();
  absl::StatusOr<DocumentMeta> own = local_->GetMeta(tenant, id);
  if (absl::IsNotFound(shared.status()) && own.ok() && own->home != DocumentHome::kLocal) {
    // Deleted or expired in the shared tier: this copy is all that is left of it.
    if (absl::Status removed = local_->Delete(tenant, id); !removed.ok()) {
      spdlog::warn("document {}: cannot drop a copy the shared tier no longer has: {}", id,
                   removed.ToString());
    }
    return shared.status();
  }
  // Unreachable, and not here: it may well exist there.
  if (Unreachable(shared.status()) && absl::IsNotFound(own.status())) {
    return FromSharedTier(shared.status());
  }
  return own;
}

absl::StatusOr<DocumentPayload> DocumentStorage::GetPayload(
    const std::string& tenant, const std::string& id, const cache_store::CacheIdentity& expected) {
  absl::StatusOr<DocumentPayload> own = local_->GetPayload(tenant, id, expected);
  if (remote_ == nullptr || own.ok() ||
      (!absl::IsNotFound(own.status()) && !absl::IsFailedPrecondition(own.status()))) {
    return own;
  }
  absl::StatusOr<cache_store::RemoteDocument> shared = remote_->GetDocument(tenant, id);
  if (!shared.ok()) {
    if (!Unreachable(shared.status())) return shared.status();
    // Unreachable: what this replica knows is the answer, a copy still being written included.
    if (absl::IsNotFound(own.status())) {
      AwaitCopies();
      own = local_->GetPayload(tenant, id, expected);
    }
    return absl::IsNotFound(own.status()) ? FromSharedTier(shared.status()) : own;
  }
  if (absl::Status reusable = cache_store::CheckReusable(shared->meta, expected); !reusable.ok()) {
    return reusable;
  }
  shared->meta.home = DocumentHome::kCopy;
  KeepCopy(std::move(shared->meta), std::move(shared->sealed));
  return std::move(shared->payload);
}

absl::StatusOr<cache_store::DocumentPage> DocumentStorage::List(const std::string& tenant,
                                                                const std::string& page_token,
                                                                int32_t limit) {
  if (remote_ != nullptr) {
    absl::StatusOr<cache_store::DocumentPage> shared = remote_->List(tenant, page_token, limit);
    if (!shared.ok() && Unreachable(shared.status())) {
      spdlog::warn("documents: listing this replica's copies, the shared tier is unreachable: {}",
                   shared.status().ToString());
      AwaitCopies();
    } else {
      return shared;
    }
  }
  return local_->List(tenant, page_token, limit);
}

absl::Status DocumentStorage::Delete(const std::string& tenant, const std::string& id) {
  if (remote_ == nullptr) return local_->Delete(tenant, id);
  const absl::Status shared = remote_->Delete(tenant, id);
  if (!shared.ok() && !absl::IsNotFound(shared)) return FromSharedTier(shared);
  AwaitCopies();  // a copy being written now must not outlive the delete
  const absl::Status own = local_->Delete(tenant, id);
  if (absl::IsNotFound(own)) return shared;  // here neither: NotFound; there only: OK
  return own;
}

std::optional<cache_store::RemoteStoreStats> DocumentStorage::RemoteStats() const {
  if (remote_ == nullptr) return std::nullopt;
  return remote_->Stats();
}

void DocumentStorage::KeepCopy(DocumentMeta meta, std::string sealed) {
  const std::string key = absl::StrCat(meta.tenant.size(), ":", meta.tenant, "/", meta.id);
  {
    base::MutexLock lock(copies_mu_);
    // One copy of a document at a time, and a bounded queue: a copy skipped is fetched again
    // on a later miss.
    if (copying_.size() >= kMaxPendingCopies || !copying_.insert(key).second) return;
  }
  const bool posted = copier_.Post([this, key, meta = std::move(meta),
                                     sealed = std::move(sealed)]() mutable {
    // A newer version of this replica's own upload (re-cut elsewhere) stays its own.
    if (absl::StatusOr<DocumentMeta> own = local_->GetMeta(meta.tenant, meta.id);
        own.ok() && own->home == DocumentHome::kShared) {
      meta.home = DocumentHome::kShared;
    }
    if (absl::Status kept = local_->PutCopy(meta, sealed); !kept.ok()) {
      spdlog::warn("document {}: cannot keep a copy of the shared tier's cache: {}", meta.id,
                   kept.ToString());
    }
    base::MutexLock lock(copies_mu_);
    copying_.erase(key);
  });
  if (!posted) {
    base::MutexLock lock(copies_mu_);
    copying_.erase(key);
  }
}

absl::StatusOr<int64_t> DocumentStorage::DropStaleCopies() {
  if (remote_ == nullptr) return 0;
  // Documents whose truth is the shared tier; processing ones are this replica's running
  // compressions, whose Redis meta is only a lease.
  std::vector<std::pair<std::string, std::string>> shared;
  absl::StatusOr<int64_t> unreadable = local_->ForEachMeta([&](const DocumentMeta& meta) {
    if (meta.home != DocumentHome::kLocal && meta.status != DocumentStatus::kProcessing) {
      shared.emplace_back(meta.tenant, meta.id);
    }
  });
  if (!unreadable.ok()) return unreadable.status();
  int64_t dropped = 0;
  constexpr size_t kBatch = 256;
  for (size_t start = 0; start < shared.size(); start += kBatch) {
    const std::vector<std::pair<std::string, std::string>> batch(
        shared.begin() + static_cast<std::ptrdiff_t>(start),
        shared.begin() + static_cast<std::ptrdiff_t>(std::min(shared.size(), start + kBatch)));
    absl::StatusOr<std::vector<bool>> exist = remote_->Exist(batch);
    if (!exist.ok()) return exist.status();
    for (size_t i = 0; i < batch.size(); ++i) {
      if ((*exist)[i]) continue;
      absl::Status removed = local_->Delete(batch[i].first, batch[i].second);
      if (!removed.ok() && !absl::IsNotFound(removed)) return removed;
      ++dropped;
    }
  }
  return dropped;
}

void DocumentStorage::AwaitCopies() {
  std::promise<void> done;
  std::future<void> written = done.get_future();
  if (copier_.Post([&done] { done.set_value(); })) written.wait();
}

std::optional<int64_t> DocumentStorage::RemoteLimit() const {
  if (remote_ == nullptr) return std::nullopt;
  return remote_->options().max_payload_bytes;
}

}  // namespace kvd::documents
