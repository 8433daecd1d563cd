#include "structured/constraint_cache.h"

#include "absl/strings/str_cat.h"

namespace kvd::structured {

ConstraintCache::Key ConstraintCache::KeyOf(const ConstraintSpec& spec) {
  const bool json = spec.kind == ConstraintSpec::Kind::kJsonSchema ||
                    spec.kind == ConstraintSpec::Kind::kJsonObject ||
                    spec.kind == ConstraintSpec::Kind::kToolCalls;
  const JsonWhitespace whitespace = json ? spec.whitespace : JsonWhitespace::kCompact;
  return Key(static_cast<int>(spec.kind), static_cast<int>(whitespace), spec.text);
}

std::shared_ptr<const Constraint> ConstraintCache::FindLocked(const Key& key) {
  const auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  // A constraint whose state space is spent serves the sequences already under it; new ones
  // get a fresh compile.
  if (it->second->second->spent()) {
    entries_.erase(it->second);
    index_.erase(it);
    return nullptr;
  }
  entries_.splice(entries_.begin(), entries_, it->second);
  ++statistics_.reused;
  return it->second->second;
}

std::shared_ptr<const Constraint> ConstraintCache::Find(const ConstraintSpec& spec) {
  const Key key = KeyOf(spec);
  base::MutexLock lock(mu_);
  return FindLocked(key);
}

absl::StatusOr<std::shared_ptr<const Constraint>> ConstraintCache::Get(const ConstraintSpec& spec,
                                                                       absl::Duration budget) {
  Key key = KeyOf(spec);
  {
    base::MutexLock lock(mu_);
    if (std::shared_ptr<const Constraint> kept = FindLocked(key)) return kept;
  }
  // Compiled outside the lock: two requests may compile the same constraint once each.
  const absl::Time start = absl::Now();
  absl::StatusOr<Grammar> grammar = CompileConstraint(spec);
  if (!grammar.ok()) return grammar.status();
  auto constraint = std::make_shared<const Constraint>(*std::move(grammar), trie_);
  if (const absl::Duration took = absl::Now() - start; took > budget) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the constraint took ", absl::FormatDuration(absl::Trunc(took, absl::Milliseconds(1))),
        " to compile, more than this server allows (", absl::FormatDuration(budget),
        "); make it smaller or simpler"));
  }
  base::MutexLock lock(mu_);
  ++statistics_.compiled;
  if (const auto it = index_.find(key); it != index_.end() && !it->second->second->spent()) {
    return it->second->second;
  } else if (it != index_.end()) {
    entries_.erase(it->second);
    index_.erase(it);
  }
  entries_.emplace_front(key, constraint);
  index_.emplace(std::move(key), entries_.begin());
  if (entries_.size() > kCapacity) {
    index_.erase(entries_.back().first);
    entries_.pop_back();
  }
  return constraint;
}

ConstraintCache::Statistics ConstraintCache::statistics() const {
  base::MutexLock lock(mu_);
  return statistics_;
}

}  // namespace kvd::structured
