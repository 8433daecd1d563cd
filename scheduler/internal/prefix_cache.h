// Automatic prefix caching: the full KV blocks of computed token prefixes, keyed by a hash chain
// (the parent block's key and the block's token ids, from a root that is the cache salt), so a
// later sequence whose tokens start the same way shares those blocks instead of computing them.
// The cache holds one reference on each block it keeps; blocks no sequence holds stay cached
// until the pool needs them and then leave least recently used first. Keys hold post-RoPE
// entries at absolute positions from 0, so a prefix is shared only at the same position.
// Thread: scheduler.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <span>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "base/sha256.h"
#include "engine/kv_cache.h"
#include "scheduler/kv_events.h"

namespace kvd::scheduler::internal {

using PrefixBlockKey = base::Sha256Digest;

// Where a sequence stands in the chain: the keys of its leading blocks shared or computed so
// far (a last block shared in part is keyed by its full tokens, which the sequence computes).
struct PrefixChain {
  PrefixBlockKey root;
  std::vector<PrefixBlockKey> keys;  // one per block hashed, in order
};

// In pool blocks (a block of tokens spans one pool block per (layer, kv head)).
struct PrefixCacheStats {
  int64_t cached_blocks = 0;  // the cache holds
  int64_t idle_blocks = 0;    // of those, held by no sequence: what MakeRoom can free
};

class PrefixCache {
 public:
  // `max_blocks`: pool blocks the cache may hold references on, at most (whole prefix blocks of
  // num_layers * num_kv_heads pool blocks each). `events`, when not null, receives a KvEvent
  // for every block stored or removed.
  PrefixCache(engine::KvBlockPool& pool, int32_t num_layers, int32_t num_kv_heads,
              int64_t max_blocks, std::vector<KvEvent>* events);
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;
  // Drops every cached block (the blocks live on in the sequences that hold them).
  ~PrefixCache();

  // The root of the chains of `salt`: sequences with different salts share nothing.
  static PrefixBlockKey Root(std::string_view salt);
  // The key of the block holding `tokens` after the block (or root) keyed `parent`.
  static PrefixBlockKey Chain(const PrefixBlockKey& parent, std::span<const int32_t> tokens);

  // Shares into the empty `kv` the cached blocks of the longest cached prefix of `tokens`,
  // leaving at least the last `min_uncomputed` (>= 1) tokens to compute (a last block cut short
  // is shared with fewer entries, and copied before the append). Returns the tokens shared;
  // `chain` holds the keys of the blocks shared.
  int32_t Attach(std::span<const int32_t> tokens, int32_t min_uncomputed, PrefixChain& chain,
                 engine::SequenceKv& kv);
  // Caches the full blocks of `kv` over tokens[0, computed) that `chain` has not hashed yet;
  // `kv` must be uncompressed (every head at its next position), at `computed` or past it
  // (entries of draft tokens not verified yet).
  void Publish(std::span<const int32_t> tokens, int32_t computed, PrefixChain& chain,
               const engine::SequenceKv& kv);
  // Marks a sequence's blocks used, its first block most recently, so a chain's later blocks
  // leave before the earlier ones they extend (called when the sequence lets them go).
  void Touch(const PrefixChain& chain);
  // Frees idle cached blocks, least recently used first, until `blocks` pool blocks are free.
  // Returns whether they are.
  bool MakeRoom(int64_t blocks);

  PrefixCacheStats Stats() const;

 private:
  struct Entry {
    std::vector<int32_t> blocks;  // one pool block per (layer, kv head), layer-major
    std::list<PrefixBlockKey>::iterator recency;
  };
  using Entries = absl::flat_hash_map<PrefixBlockKey, Entry>;

  bool Idle(const Entry& entry) const;
  // Drops the entry of recency node `node`; returns the node after it.
  std::list<PrefixBlockKey>::iterator Evict(std::list<PrefixBlockKey>::iterator node);
  // Evicts idle entries, least recently used first, while `more()`.
  void EvictIdle(const std::function<bool()>& more);
  // Makes room for one more entry under max_entries_; false when every entry is in use.
  bool FitOneMore();

  engine::KvBlockPool& pool_;
  const int32_t heads_;  // (layer, kv head) pairs
  const int64_t max_entries_;
  std::vector<KvEvent>* const events_;
  Entries entries_;
  std::list<PrefixBlockKey> recency_;  // most recently used first
};

}  // namespace kvd::scheduler::internal
