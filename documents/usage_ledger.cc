#include "documents/usage_ledger.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_details.h"

namespace kvd::documents {

absl::Status UsageLedger::Reserve(const std::string& tenant, const std::string& id,
                                  const DocumentQuota& quota, int64_t estimate) {
  base::MutexLock lock(mu_);
  TenantDocuments& usage = usage_[tenant];
  if (quota.max_documents > 0 && usage.documents >= quota.max_documents) {
    return WithRetryAfter(
        absl::ResourceExhaustedError(absl::StrCat("tenant '", tenant, "' stores ", usage.documents,
                                                  " documents, its limit; delete some first")),
        60);
  }
  if (quota.max_bytes > 0 && estimate > quota.max_bytes) {
    return WithParam(WithErrorCode(absl::InvalidArgumentError(
                                       absl::StrCat("this document's cache takes about ", estimate,
                                                    " bytes, more than the tenant's ",
                                                    quota.max_bytes, "; upload a smaller ratio")),
                                   "request_too_large"),
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
  reservations_[id] = {tenant, estimate};
  return absl::OkStatus();
}

void UsageLedger::Settle(const std::string& id, int64_t stored_bytes) {
  base::MutexLock lock(mu_);
  const auto it = reservations_.find(id);
  if (it == reservations_.end()) return;
  usage_[it->second.tenant].bytes += stored_bytes - it->second.bytes;
  reservations_.erase(it);
}

bool UsageLedger::Release(const std::string& id) {
  base::MutexLock lock(mu_);
  const auto it = reservations_.find(id);
  if (it == reservations_.end()) return false;
  TenantDocuments& usage = usage_[it->second.tenant];
  --usage.documents;
  usage.bytes -= it->second.bytes;
  reservations_.erase(it);
  return true;
}

void UsageLedger::Remove(const std::string& tenant, int64_t bytes) {
  base::MutexLock lock(mu_);
  TenantDocuments& usage = usage_[tenant];
  --usage.documents;
  usage.bytes -= bytes;
}

void UsageLedger::Resize(const std::string& tenant, int64_t bytes) {
  base::MutexLock lock(mu_);
  usage_[tenant].bytes += bytes;
}

void UsageLedger::Recount(StoredDocuments stored) {
  base::MutexLock lock(mu_);
  // A running compression's document is stored as processing with no bytes yet: counted by the
  // scan unless its meta was written after the scan read past it.
  for (const auto& [id, reservation] : reservations_) {
    TenantDocuments& usage = stored.usage[reservation.tenant];
    usage.bytes += reservation.bytes;
    if (!stored.processing.contains(id)) ++usage.documents;
  }
  usage_ = std::move(stored.usage);
}

std::map<std::string, TenantDocuments> UsageLedger::Snapshot() const {
  base::MutexLock lock(mu_);
  return usage_;
}

}  // namespace kvd::documents
