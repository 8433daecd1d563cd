// The prefix cache's changes as KV events a router can follow, with the content of vLLM's KV
// events (BlockStored, BlockRemoved, AllBlocksCleared): numbered batches, one per scheduler
// step that changed the cache, in a bounded log, and a mirror of the cached blocks so that a
// follower that starts late, or falls behind the log, begins from a snapshot. The scheduler
// thread appends; any thread reads and listens.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "base/mutex.h"

namespace kvd::scheduler {

struct KvEvent {
  enum class Kind { kBlockStored, kBlockRemoved, kAllBlocksCleared };
  Kind kind = Kind::kBlockStored;
  // Lowercase hex SHA-256 keys; exactly one for a stored block, whose parent and tokens follow.
  std::vector<std::string> block_hashes;
  std::string parent_block_hash;          // stored: the previous block's key; "" for a first one
  std::vector<int32_t> token_ids;         // stored: the block's tokens

  bool operator==(const KvEvent&) const = default;
};

struct KvEventBatch {
  uint64_t sequence = 0;  // 1, 2, ... in append order; a snapshot carries the latest
  double timestamp = 0.0;  // seconds since the Unix epoch
  std::vector<KvEvent> events;
};

class KvEventLog {
 public:
  // `block_size`: tokens per block, reported with every stored block. `max_events`: events
  // kept, in whole batches (the latest always), for followers that fall behind.
  KvEventLog(int32_t block_size, size_t max_events);
  KvEventLog(const KvEventLog&) = delete;
  KvEventLog& operator=(const KvEventLog&) = delete;

  int32_t block_size() const { return block_size_; }
  // Drawn at random when the log is made: batch numbers of another log (another process)
  // mean nothing here.
  uint64_t epoch() const { return epoch_; }

  // Records one batch and wakes the listeners. Empty batches are dropped.
  void Append(double timestamp, std::vector<KvEvent> events);
  // What a follower that has seen every batch up to `after` needs: the batches after it, or,
  // when the log no longer holds them (or `after` is 0, a new follower), one snapshot batch:
  // AllBlocksCleared, then a BlockStored for every cached block, numbered as the latest batch.
  // Nothing when it is up to date.
  std::vector<KvEventBatch> Since(uint64_t after) const;
  // The number of the latest batch (0 before the first).
  uint64_t latest() const;
  // Whether Since(after) answers with the batches themselves rather than a snapshot (or
  // nothing): they are all still held.
  bool Holds(uint64_t after) const;
  // Blocks the events say are cached now.
  size_t cached_blocks() const;

  // `listener` runs, on the appending thread and without the log's lock, after each Append; it
  // may call the log. It may still run once after RemoveListener returns (an Append that had
  // copied it), so it must stay safe to call: post to an executor, touch shared state only.
  uint64_t AddListener(std::function<void()> listener) const;
  void RemoveListener(uint64_t id) const;

 private:
  struct Cached {
    uint64_t order;  // when it was stored, so a snapshot lists parents before their children
    std::string parent;
    std::vector<int32_t> tokens;
  };
  void Apply(const KvEvent& event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool HoldsLocked(uint64_t after) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int32_t block_size_;
  const size_t max_events_;
  const uint64_t epoch_;
  mutable base::Mutex mu_;
  std::deque<KvEventBatch> batches_ ABSL_GUARDED_BY(mu_);
  size_t kept_events_ ABSL_GUARDED_BY(mu_) = 0;  // over batches_
  uint64_t latest_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t stored_ ABSL_GUARDED_BY(mu_) = 0;  // blocks stored so far, for Cached::order
  absl::flat_hash_map<std::string, Cached> cached_ ABSL_GUARDED_BY(mu_);
  // Listening reads the log: a follower holds it const.
  mutable std::map<uint64_t, std::function<void()>> listeners_ ABSL_GUARDED_BY(mu_);
  mutable uint64_t next_listener_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace kvd::scheduler
