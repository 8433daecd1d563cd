// The memory tier: recently used document caches kept loaded, least recently used leaving
// first once their bytes exceed the budget, so hot documents skip the store. Thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/mutex.h"
#include "cache_store/store/document_payload.h"

namespace kvd::cache_store {

struct TierStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t documents = 0;
  int64_t bytes = 0;
};

class DocumentTier {
 public:
  explicit DocumentTier(size_t capacity_bytes) : capacity_(capacity_bytes) {}

  // The cache of (tenant, id) if loaded and computed with `fingerprint`; counts a hit or miss.
  std::shared_ptr<const DocumentPayload> Get(const std::string& tenant, const std::string& id,
                                             const std::string& fingerprint);
  // Keeps `payload` as (tenant, id)'s cache, replacing any other, then evicts down to the
  // budget (a payload larger than the whole budget is not kept).
  void Put(const std::string& tenant, const std::string& id, const std::string& fingerprint,
           std::shared_ptr<const DocumentPayload> payload);
  // Forgets (tenant, id).
  void Erase(const std::string& tenant, const std::string& id);
  TierStats Stats() const;

  // Host bytes a payload holds.
  static int64_t PayloadBytes(const DocumentPayload& payload);

 private:
  struct Entry {
    std::string fingerprint;
    std::shared_ptr<const DocumentPayload> payload;
    int64_t bytes = 0;
    std::list<std::string>::iterator recency;
  };
  static std::string Key(const std::string& tenant, const std::string& id);
  void EraseLocked(std::map<std::string, Entry>::iterator it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t capacity_;
  mutable base::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::list<std::string> recency_ ABSL_GUARDED_BY(mu_);  // most recent first
  TierStats stats_ ABSL_GUARDED_BY(mu_);                 // (documents, bytes kept current)
};

}  // namespace kvd::cache_store
