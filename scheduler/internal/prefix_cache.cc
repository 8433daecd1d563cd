#include "scheduler/internal/prefix_cache.h"

#include <cstring>
#include <functional>
#include <string>

#include "absl/strings/escaping.h"
#include "base/check.h"

namespace kvd::scheduler::internal {
namespace {

void AppendLengthPrefixed(std::string& out, std::string_view bytes) {
  const uint64_t size = bytes.size();
  out.append(reinterpret_cast<const char*>(&size), sizeof(size));
  out.append(bytes);
}

std::string Hex(const PrefixBlockKey& key) {
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(key.data()), key.size()));
}

}  // namespace

PrefixCache::PrefixCache(engine::KvBlockPool& pool, int32_t num_layers, int32_t num_kv_heads,
                         int64_t max_blocks, std::vector<KvEvent>* events)
    : pool_(pool),
      heads_(num_layers * num_kv_heads),
      max_entries_(max_blocks / (int64_t{num_layers} * num_kv_heads)),
      events_(events) {}

PrefixCache::~PrefixCache() {
  for (auto& [key, entry] : entries_) {
    for (int32_t block : entry.blocks) pool_.Release(block);
  }
}

PrefixBlockKey PrefixCache::Root(std::string_view salt) {
  std::string bytes = "kvd prefix cache v1";
  AppendLengthPrefixed(bytes, salt);
  return base::Sha256(bytes);
}

PrefixBlockKey PrefixCache::Chain(const PrefixBlockKey& parent, std::span<const int32_t> tokens) {
  std::string bytes(parent.begin(), parent.end());
  const size_t offset = bytes.size();
  bytes.resize(offset + tokens.size_bytes());
  std::memcpy(bytes.data() + offset, tokens.data(), tokens.size_bytes());
  return base::Sha256(bytes);
}

int32_t PrefixCache::Attach(std::span<const int32_t> tokens, int32_t min_uncomputed,
                            PrefixChain& chain, engine::SequenceKv& kv) {
  KVD_CHECK(kv.next_position() == 0);
  KVD_CHECK(min_uncomputed >= 1);
  const int64_t block_size = pool_.block_size();
  // The last token is always computed: its logits start the output.
  const int64_t limit = std::ssize(tokens) - min_uncomputed;
  chain.keys.clear();
  std::vector<const Entry*> hits;
  for (int64_t start = 0; start < limit; start += block_size) {
    if (start + block_size > std::ssize(tokens)) break;
    const PrefixBlockKey key = Chain(chain.keys.empty() ? chain.root : chain.keys.back(),
                                     tokens.subspan(start, block_size));
    const auto it = entries_.find(key);
    if (it == entries_.end()) break;
    hits.push_back(&it->second);
    chain.keys.push_back(key);
  }
  const int64_t shared = std::min(std::ssize(hits) * block_size, std::max<int64_t>(0, limit));
  for (size_t i = 0; i < hits.size(); ++i) {
    const int64_t entries = std::min(block_size, shared - static_cast<int64_t>(i) * block_size);
    kv.AppendSharedBlocks(pool_, hits[i]->blocks, static_cast<int32_t>(entries));
  }
  Touch(chain);
  return static_cast<int32_t>(shared);
}

void PrefixCache::Publish(std::span<const int32_t> tokens, int32_t computed, PrefixChain& chain,
                          const engine::SequenceKv& kv) {
  const size_t block_size = static_cast<size_t>(pool_.block_size());
  KVD_CHECK(static_cast<size_t>(computed) <= tokens.size());
  // Entries past `computed` (draft tokens not verified yet) lie in no block published here.
  KVD_CHECK(kv.next_position() >= computed);
  while ((chain.keys.size() + 1) * block_size <= static_cast<size_t>(computed)) {
    const size_t index = chain.keys.size();
    const PrefixBlockKey parent = chain.keys.empty() ? chain.root : chain.keys.back();
    const std::span<const int32_t> block_tokens = tokens.subspan(index * block_size, block_size);
    const PrefixBlockKey key = Chain(parent, block_tokens);
    chain.keys.push_back(key);
    if (entries_.contains(key) || !FitOneMore()) continue;
    Entry entry;
    entry.blocks.reserve(static_cast<size_t>(heads_));
    for (int32_t layer = 0; layer < kv.num_layers(); ++layer) {
      for (int32_t head = 0; head < kv.num_kv_heads(); ++head) {
        KVD_CHECK(kv.length(layer, head) == kv.next_position());
        const int32_t block = kv.blocks(layer, head)[index];
        pool_.AddRef(block);
        entry.blocks.push_back(block);
      }
    }
    recency_.push_front(key);
    entry.recency = recency_.begin();
    if (events_ != nullptr) {
      events_->push_back({.kind = KvEvent::Kind::kBlockStored,
                          .block_hashes = {Hex(key)},
                          .parent_block_hash = index == 0 ? "" : Hex(parent),
                          .token_ids = {block_tokens.begin(), block_tokens.end()}});
    }
    entries_.emplace(key, std::move(entry));
  }
}

void PrefixCache::Touch(const PrefixChain& chain) {
  for (auto key = chain.keys.rbegin(); key != chain.keys.rend(); ++key) {
    const auto it = entries_.find(*key);
    if (it != entries_.end()) recency_.splice(recency_.begin(), recency_, it->second.recency);
  }
}

bool PrefixCache::Idle(const Entry& entry) const {
  for (int32_t block : entry.blocks) {
    KVD_CHECK(pool_.ref_count(block) >= 1);  // the cache's own reference
    if (pool_.ref_count(block) > 1) return false;
  }
  return true;
}

std::list<PrefixBlockKey>::iterator PrefixCache::Evict(std::list<PrefixBlockKey>::iterator node) {
  const auto entry = entries_.find(*node);
  KVD_CHECK(entry != entries_.end());
  for (int32_t block : entry->second.blocks) pool_.Release(block);
  if (events_ != nullptr) {
    events_->push_back({.kind = KvEvent::Kind::kBlockRemoved, .block_hashes = {Hex(*node)}});
  }
  entries_.erase(entry);
  return recency_.erase(node);
}

void PrefixCache::EvictIdle(const std::function<bool()>& more) {
  for (auto node = recency_.end(); node != recency_.begin() && more();) {
    --node;
    const auto entry = entries_.find(*node);
    KVD_CHECK(entry != entries_.end());
    if (!Idle(entry->second)) continue;
    node = Evict(node);  // the next node; the loop goes on with the one before the evicted
  }
}

bool PrefixCache::MakeRoom(int64_t blocks) {
  EvictIdle([&] { return pool_.num_free_blocks() < blocks; });
  return pool_.num_free_blocks() >= blocks;
}

bool PrefixCache::FitOneMore() {
  auto full = [&] { return static_cast<int64_t>(entries_.size()) >= max_entries_; };
  if (full()) EvictIdle(full);
  return !full();
}

PrefixCacheStats PrefixCache::Stats() const {
  PrefixCacheStats stats;
  stats.cached_blocks = static_cast<int64_t>(entries_.size()) * heads_;
  for (const auto& [key, entry] : entries_) stats.idle_blocks += Idle(entry) ? heads_ : 0;
  return stats;
}

}  // namespace kvd::scheduler::internal
