// The states of a nondeterministic pushdown matcher over a Grammar, hash-consed: a stack of
// grammar positions is an integer id, so a matcher state is a small sorted set of ids, equal
// states have equal sets, and each (stack, byte) transition is computed once and remembered.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "structured/grammar.h"

namespace kvd::structured {

// Not synchronised: its owner serialises every call.
class StackSpace {
 public:
  // The empty stack: the bytes so far are a whole sentence of the grammar.
  static constexpr int32_t kAccepted = 0;

  // The most stacks one expansion may reach: an ambiguous grammar ((a|a)*...) can reach
  // exponentially many; past this the expansion stops and overflowed() turns true.
  static constexpr size_t kMaxExpansion = 1 << 14;

  // Holds at most `max_stacks` distinct stacks; past that, transitions that need a new one
  // find none and overflowed() turns true.
  StackSpace(const Grammar& grammar, size_t max_stacks);

  // The stacks before any byte, sorted and distinct.
  const std::vector<int32_t>& initial() const { return initial_; }
  // Appends the stacks `stack` moves to on `byte` (none when it does not accept the byte).
  void Step(int32_t stack, uint8_t byte, std::vector<int32_t>& out);
  // The stacks `stacks` move to on `byte`, sorted and distinct, into `out` (cleared first).
  void StepAll(std::span<const int32_t> stacks, uint8_t byte, std::vector<int32_t>& out);
  // Whether a stack could not be made because of the limit.
  bool overflowed() const { return overflowed_; }
  size_t stack_count() const { return nodes_.size(); }

 private:
  struct Node {
    int32_t position;  // the symbol on top: a byte set (or, for inner nodes, where to return)
    int32_t parent;
  };

  int32_t Intern(int32_t position, int32_t parent);
  // Every stack reached from (`parent`, `position`) by expanding rules and returning from ended
  // sequences until a byte set is on top, appended to `out`.
  void Expand(int32_t parent, int32_t position, std::vector<int32_t>& out);

  const Grammar& grammar_;
  const size_t max_stacks_;
  bool overflowed_ = false;
  std::vector<Node> nodes_;
  absl::flat_hash_map<uint64_t, int32_t> node_ids_;  // (position, parent) → id
  // (stack, byte) → the range of step_targets_ it moves to.
  absl::flat_hash_map<uint64_t, std::pair<uint32_t, uint32_t>> steps_;
  std::vector<int32_t> step_targets_;
  std::vector<int32_t> initial_;
  // Scratch of Expand.
  std::vector<std::pair<int32_t, int32_t>> pending_;
  absl::flat_hash_set<uint64_t> seen_;
};

}  // namespace kvd::structured
