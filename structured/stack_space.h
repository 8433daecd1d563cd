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
  // The fewest bytes after which `stack` is accepted (kUnboundedLength at most).
  int32_t shortest_completion(int32_t stack) const { return shortest_completion_[stack]; }
  // Appends the stacks `stack` moves to on `byte` (none when it does not accept the byte).
  void Step(int32_t stack, uint8_t byte, std::vector<int32_t>& out);
  // The stacks `stacks` move to on `byte`, sorted and distinct, into `out` (cleared first).
  void StepAll(std::span<const int32_t> stacks, uint8_t byte, std::vector<int32_t>& out);
  // Whether, since the last BeginOperation, a limit cut a transition short (too many stacks,
  // too wide an expansion, more work than allowed): the result is then incomplete, and the
  // operation's caller must fail rather than use it. A cut transition is never remembered.
  bool overflowed() const { return overflowed_; }
  // Starts an operation allowed `work` stack transitions at most (a mask's walk, an advance).
  void BeginOperation(uint64_t work) {
    overflowed_ = false;
    work_left_ = work;
  }
  // Whether no new stack can be made, or the stacks before any byte were cut short: the space
  // is spent for good.
  bool full() const { return initial_cut_ || nodes_.size() >= max_stacks_; }
  bool initial_cut() const { return initial_cut_; }
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
  const std::vector<int32_t> shortest_suffix_;  // ShortestSuffixLengths(grammar_)
  const size_t max_stacks_;
  bool overflowed_ = false;
  bool initial_cut_ = false;
  uint64_t work_left_ = UINT64_MAX;
  std::vector<Node> nodes_;
  std::vector<int32_t> shortest_completion_;  // by stack, as nodes_
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
