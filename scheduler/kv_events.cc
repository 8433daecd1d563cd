#include "scheduler/kv_events.h"

#include <random>
#include <utility>

#include "base/check.h"

namespace kvd::scheduler {

KvEventLog::KvEventLog(int32_t block_size, size_t max_events)
    : block_size_(block_size), max_events_(max_events), epoch_(std::random_device{}()) {
  KVD_CHECK(block_size > 0 && max_events > 0);
}

void KvEventLog::Apply(const KvEvent& event) {
  switch (event.kind) {
    case KvEvent::Kind::kBlockStored:
      KVD_CHECK(event.block_hashes.size() == 1);
      cached_[event.block_hashes.front()] =
          Cached{++stored_, event.parent_block_hash, event.token_ids};
      return;
    case KvEvent::Kind::kBlockRemoved:
      for (const std::string& hash : event.block_hashes) cached_.erase(hash);
      return;
    case KvEvent::Kind::kAllBlocksCleared:
      cached_.clear();
      return;
  }
}

void KvEventLog::Append(double timestamp, std::vector<KvEvent> events) {
  if (events.empty()) return;
  std::vector<std::function<void()>> listeners;
  {
    base::MutexLock lock(mu_);
    for (const KvEvent& event : events) Apply(event);
    kept_events_ += events.size();
    batches_.push_back({++latest_, timestamp, std::move(events)});
    while (kept_events_ > max_events_ && batches_.size() > 1) {
      kept_events_ -= batches_.front().events.size();
      batches_.pop_front();
    }
    for (const auto& [id, listener] : listeners_) listeners.push_back(listener);
  }
  for (const auto& listener : listeners) listener();
}

bool KvEventLog::Holds(uint64_t after) const {
  base::MutexLock lock(mu_);
  return HoldsLocked(after);
}

bool KvEventLog::HoldsLocked(uint64_t after) const {
  return after > 0 && after < latest_ && !batches_.empty() &&
         batches_.front().sequence <= after + 1;
}

std::vector<KvEventBatch> KvEventLog::Since(uint64_t after) const {
  base::MutexLock lock(mu_);
  if (after == latest_) return {};
  if (HoldsLocked(after)) {
    std::vector<KvEventBatch> out;
    for (const KvEventBatch& batch : batches_) {
      if (batch.sequence > after) out.push_back(batch);
    }
    return out;
  }
  KvEventBatch snapshot;
  snapshot.sequence = latest_;
  snapshot.timestamp = batches_.empty() ? 0.0 : batches_.back().timestamp;
  snapshot.events.push_back({.kind = KvEvent::Kind::kAllBlocksCleared});
  std::map<uint64_t, std::pair<const std::string*, const Cached*>> in_order;
  for (const auto& [hash, cached] : cached_) in_order[cached.order] = {&hash, &cached};
  for (const auto& [order, entry] : in_order) {
    snapshot.events.push_back({.kind = KvEvent::Kind::kBlockStored,
                               .block_hashes = {*entry.first},
                               .parent_block_hash = entry.second->parent,
                               .token_ids = entry.second->tokens});
  }
  return {std::move(snapshot)};
}

uint64_t KvEventLog::latest() const {
  base::MutexLock lock(mu_);
  return latest_;
}

size_t KvEventLog::cached_blocks() const {
  base::MutexLock lock(mu_);
  return cached_.size();
}

uint64_t KvEventLog::AddListener(std::function<void()> listener) const {
  base::MutexLock lock(mu_);
  const uint64_t id = next_listener_++;
  listeners_.emplace(id, std::move(listener));
  return id;
}

void KvEventLog::RemoveListener(uint64_t id) const {
  base::MutexLock lock(mu_);
  listeners_.erase(id);
}

}  // namespace kvd::scheduler
