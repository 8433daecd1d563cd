// Compiled constraints by content: requests that ask for the same constraint share one, its
// remembered masks included. Bounded; the least recently used constraint leaves first (a
// sequence still under it keeps it alive).
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "structured/constraint.h"
#include "structured/constraint_spec.h"
#include "structured/token_trie.h"

namespace kvd::structured {

// Thread-safe.
class ConstraintCache {
 public:
  // Constraints kept, at most. Each holds up to Constraint::kMaxCachedMasks masks.
  static constexpr size_t kCapacity = 32;

  explicit ConstraintCache(std::shared_ptr<const TokenTrie> trie) : trie_(std::move(trie)) {}

  const TokenTrie& trie() const { return *trie_; }

  // The compiled constraint of `spec`, compiled now when it is not kept. InvalidArgument as
  // CompileConstraint, and when the compile took longer than `budget` (the constraint is then
  // not kept, so that no later request gets it for free).
  [[nodiscard]] absl::StatusOr<std::shared_ptr<const Constraint>> Get(
      const ConstraintSpec& spec, absl::Duration budget = absl::InfiniteDuration());
  // The kept constraint of `spec`, or null: no compile.
  std::shared_ptr<const Constraint> Find(const ConstraintSpec& spec);

  // What identifies a constraint: kind, whitespace (kCompact where the kind ignores it), text.
  using Key = std::tuple<int, int, std::string>;
  static Key KeyOf(const ConstraintSpec& spec);

  struct Statistics {
    uint64_t compiled = 0;
    uint64_t reused = 0;
  };
  Statistics statistics() const;

 private:
  // The kept constraint under `key`, most recently used now; null when none is (a spent one
  // is forgotten).
  std::shared_ptr<const Constraint> FindLocked(const Key& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<const TokenTrie> trie_;
  mutable base::Mutex mu_;
  // Most recently used first.
  std::list<std::pair<Key, std::shared_ptr<const Constraint>>> entries_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<Key, decltype(entries_)::iterator> index_ ABSL_GUARDED_BY(mu_);
  Statistics statistics_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kvd::structured
