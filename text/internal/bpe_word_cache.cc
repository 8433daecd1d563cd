#include "text/internal/bpe_word_cache.h"

#include <functional>
#include <mutex>

#include "text/internal/absl_string_view.h"

namespace kvd::text::internal {
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

}  // namespace kvd::text::internal
