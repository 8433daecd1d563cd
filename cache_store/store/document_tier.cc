#include "cache_store/store/document_tier.h"

#include <utility>

#include "base/mutex.h"

namespace kvd::cache_store {

std::string DocumentTier::Key(const std::string& tenant, const std::string& id) {
  // Tenant ids cannot hold a newline, so the key is unambiguous.
  return tenant + "\n" + id;
}

int64_t DocumentTier::PayloadBytes(const DocumentPayload& payload) {
  int64_t bytes = static_cast<int64_t>(payload.prefix_text.size() +
                                       payload.prefix_token_ids.size() * sizeof(int32_t));
  for (const cache_store::HeadKv& head : payload.heads) {
    bytes += static_cast<int64_t>(
        (head.keys.size() + head.values.size() + head.log_votes.size() + head.scores.size()) *
            sizeof(float) +
        head.positions.size() * sizeof(int32_t));
  }
  return bytes;
}

std::shared_ptr<const DocumentPayload> DocumentTier::Get(const std::string& tenant,
                                                         const std::string& id,
                                                         const std::string& fingerprint) {
  base::MutexLock lock(mu_);
  const auto it = entries_.find(Key(tenant, id));
  if (it == entries_.end() || it->second.fingerprint != fingerprint) {
    ++stats_.misses;
    return nullptr;
  }
  ++stats_.hits;
  recency_.splice(recency_.begin(), recency_, it->second.recency);
  return it->second.payload;
}

void DocumentTier::Put(const std::string& tenant, const std::string& id,
                       const std::string& fingerprint,
                       std::shared_ptr<const DocumentPayload> payload) {
  const int64_t bytes = PayloadBytes(*payload);
  base::MutexLock lock(mu_);
  const std::string key = Key(tenant, id);
  if (auto it = entries_.find(key); it != entries_.end()) EraseLocked(it);
  if (bytes > static_cast<int64_t>(capacity_)) return;
  recency_.push_front(key);
  entries_[key] = Entry{fingerprint, std::move(payload), bytes, recency_.begin()};
  ++stats_.documents;
  stats_.bytes += bytes;
  while (stats_.bytes > static_cast<int64_t>(capacity_)) {
    EraseLocked(entries_.find(recency_.back()));
  }
}

void DocumentTier::Erase(const std::string& tenant, const std::string& id) {
  base::MutexLock lock(mu_);
  if (auto it = entries_.find(Key(tenant, id)); it != entries_.end()) EraseLocked(it);
}

void DocumentTier::EraseLocked(std::map<std::string, Entry>::iterator it) {
  --stats_.documents;
  stats_.bytes -= it->second.bytes;
  recency_.erase(it->second.recency);
  entries_.erase(it);
}

TierStats DocumentTier::Stats() const {
  base::MutexLock lock(mu_);
  return stats_;
}

}  // namespace kvd::cache_store
