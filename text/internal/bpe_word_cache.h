// A bounded, thread-safe cache from a pre-token's bytes to its BPE ids: most words of running
// text repeat, so Encode skips the merge loop for them.
#pragma once

#include <array>
#include <cstdint>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"

namespace kvd::text::internal {

class BpeWordCache {
 public:
  // Words longer than this are not cached: they are rare, and would crowd out common ones.
  static constexpr size_t kMaxWordBytes = 64;

  // Appends the cached ids of `word` to `ids` and returns true, or returns false on a miss.
  bool Lookup(std::string_view word, std::vector<int32_t>* ids) const;
  void Insert(std::string_view word, std::span<const int32_t> ids);

 private:
  // Sharded so concurrent encoders rarely contend; a full shard is cleared, which keeps memory
  // bounded and lets the cache follow the text it sees.
  static constexpr size_t kShards = 16;
  static constexpr size_t kMaxEntriesPerShard = 8192;

  // std::shared_mutex rather than absl::Mutex: Debian's prebuilt Abseil is not instrumented
  // for ThreadSanitizer, which then reports false races on everything an absl::Mutex guards.
  struct Shard {
    std::shared_mutex mu;
    absl::flat_hash_map<std::string, absl::InlinedVector<int32_t, 4>> words;  // guarded by mu
  };

  Shard& ShardFor(std::string_view word) const;

  mutable std::array<Shard, kShards> shards_;
};

}  // namespace kvd::text::internal
