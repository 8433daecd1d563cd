// What each tenant's documents count against its quota: its processing and ready documents
// and their bytes, a compression's estimate standing in for its size until it is stored.
// Thread-safe; every change of a tenant's usage goes through here.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "base/mutex.h"

namespace kvd::documents {

// A tenant's document limits; 0 means unlimited.
struct DocumentQuota {
  int64_t max_documents = 0;
  int64_t max_bytes = 0;
};

// What counts against a tenant's quota: its processing and ready documents.
struct TenantDocuments {
  int64_t documents = 0;
  int64_t bytes = 0;

  bool operator==(const TenantDocuments&) const = default;
};

// What one scan of the store counted: each tenant's documents that are not failed and their
// bytes, and the ids of the processing documents among them.
struct StoredDocuments {
  std::map<std::string, TenantDocuments> usage;
  std::set<std::string> processing;
};

class UsageLedger {
 public:
  // Counts document `id` of `tenant` with `estimate` bytes reserved, or refuses it:
  // ResourceExhausted (Retry-After 60) when the tenant is at its limit, InvalidArgument with
  // code request_too_large (param "compression") when the document alone passes it.
  absl::Status Reserve(const std::string& tenant, const std::string& id, const DocumentQuota& quota,
                       int64_t estimate);
  // Document `id` is stored in `stored_bytes`: they replace its reservation. Nothing when it
  // holds none (released since).
  void Settle(const std::string& id, int64_t stored_bytes);
  // Document `id` will not be stored (its compression failed or it was deleted while
  // compressing): it and its reservation no longer count. false, and nothing done, when it
  // holds none (settled or released before).
  bool Release(const std::string& id);
  // A stored document of `bytes` of `tenant` was deleted.
  void Remove(const std::string& tenant, int64_t bytes);
  // A stored document of `tenant` changed size by `bytes`.
  void Resize(const std::string& tenant, int64_t bytes);
  // Replaces every tenant's usage by what a scan of the store counted, plus the reservations of
  // compressions still running: their bytes, and the documents themselves when the scan did not
  // see them (reserved while it ran), so that a recount racing an upload never forgets it.
  void Recount(StoredDocuments stored);

  std::map<std::string, TenantDocuments> Snapshot() const;

 private:
  struct Reservation {
    std::string tenant;
    int64_t bytes = 0;
  };

  mutable base::Mutex mu_;
  std::map<std::string, TenantDocuments> usage_ ABSL_GUARDED_BY(mu_);     // by tenant
  std::map<std::string, Reservation> reservations_ ABSL_GUARDED_BY(mu_);  // by document id
};

}  // namespace kvd::documents
