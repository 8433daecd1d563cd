#include "engine/internal/bpe_word_cache.h"

#include <functional>
#include <mutex>

namespace kvd::engine::internal {
namespace {

// Debian's Abseil has its own string_view; its hash maps look std::string keys up by that one.
absl::string_view AsAbsl(std::string_view s) { return {s.data(), s.size()}; }

}  // namespace

BpeWordCache::Shard& BpeWordCache::ShardFor(std::string_view word) const {
  // std::hash, not absl::Hash: the shard must not correlate with the map's own hash bits.
  return shards_[std::hash<std::string_view>()(word) % kShards];
}

bool BpeWordCache::Lookup(std::string_view word, std::vector<int32_t>* ids) const {
  if (word.size() > kMaxWordBytes) return false;
  Shard& shard = ShardFor(word);
  std::shared_lock lock(shard.mu);
  const auto it = shard.words.find(AsAbsl(word));
  if (it == shard.words.end()) return false;
  ids->insert(ids->end(), it->second.begin(), it->second.end());
  return true;
}

void BpeWordCache::Insert(std::string_view word, std::span<const int32_t> ids) {
  if (word.size() > kMaxWordBytes) return;
  Shard& shard = ShardFor(word);
  std::unique_lock lock(shard.mu);
  if (shard.words.size() >= kMaxEntriesPerShard) shard.words.clear();
  shard.words.try_emplace(std::string(word), ids.begin(), ids.end());
}

}  // namespace kvd::engine::internal
