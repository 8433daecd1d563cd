#include "structured/stack_space.h"

#include <algorithm>

#include "base/check.h"
#include "structured/shortest_completion.h"

namespace kvd::structured {
namespace {

uint64_t PairKey(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

void SortDistinct(std::vector<int32_t>& ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
}

}  // namespace

StackSpace::StackSpace(const Grammar& grammar, size_t max_stacks)
    : grammar_(grammar), shortest_suffix_(ShortestSuffixLengths(grammar)), max_stacks_(max_stacks) {
  nodes_.push_back({-1, -1});  // kAccepted
  shortest_completion_.push_back(0);
  for (int32_t start : grammar_.alternatives(grammar_.root())) {
    Expand(kAccepted, start, initial_);
  }
  SortDistinct(initial_);
  initial_cut_ = overflowed_;
}

int32_t StackSpace::Intern(int32_t position, int32_t parent) {
  const auto [it, inserted] =
      node_ids_.try_emplace(PairKey(position, parent), static_cast<int32_t>(nodes_.size()));
  if (inserted) {
    if (nodes_.size() >= max_stacks_) {
      node_ids_.erase(it);
      overflowed_ = true;
      return -1;
    }
    nodes_.push_back({position, parent});
    shortest_completion_.push_back(
        AddLengths(shortest_suffix_[position], shortest_completion_[parent]));
  }
  return it->second;
}

void StackSpace::Expand(int32_t parent, int32_t position, std::vector<int32_t>& out) {
  pending_.clear();
  seen_.clear();
  pending_.emplace_back(parent, position);
  while (!pending_.empty()) {
    if (seen_.size() > kMaxExpansion) {
      overflowed_ = true;
      return;
    }
    const auto [below, at] = pending_.back();
    pending_.pop_back();
    if (!seen_.insert(PairKey(below, at)).second) continue;
    const Symbol& symbol = grammar_.symbol(at);
    switch (symbol.kind) {
      case Symbol::Kind::kBytes: {
        const int32_t id = Intern(at, below);
        if (id >= 0) out.push_back(id);
        break;
      }
      case Symbol::Kind::kEnd:
        if (below == kAccepted) {
          out.push_back(kAccepted);
        } else {
          pending_.emplace_back(nodes_[below].parent, nodes_[below].position);
        }
        break;
      case Symbol::Kind::kRule: {
        // A reference that ends its sequence returns straight to the caller's caller, so
        // right recursion (repetition) keeps the stack's depth constant.
        int32_t callee_parent = below;
        if (grammar_.symbol(at + 1).kind != Symbol::Kind::kEnd) {
          callee_parent = Intern(at + 1, below);
          if (callee_parent < 0) break;
        }
        for (int32_t start : grammar_.alternatives(symbol.index)) {
          pending_.emplace_back(callee_parent, start);
        }
        break;
      }
    }
  }
}

void StackSpace::Step(int32_t stack, uint8_t byte, std::vector<int32_t>& out) {
  if (stack == kAccepted) return;
  const uint64_t key = PairKey(stack, byte);
  if (const auto it = steps_.find(key); it != steps_.end()) {
    const auto [first, count] = it->second;
    out.insert(out.end(), step_targets_.begin() + first, step_targets_.begin() + first + count);
    return;
  }
  const Node node = nodes_[stack];
  const Symbol& symbol = grammar_.symbol(node.position);
  KVD_CHECK(symbol.kind == Symbol::Kind::kBytes);
  std::vector<int32_t> targets;
  const bool overflowed_before = overflowed_;
  overflowed_ = false;
  if (grammar_.byte_set(symbol.index).Has(byte)) {
    Expand(node.parent, node.position + 1, targets);
    SortDistinct(targets);
  }
  out.insert(out.end(), targets.begin(), targets.end());
  if (overflowed_) return;  // cut short: not remembered
  overflowed_ = overflowed_before;
  steps_.emplace(key, std::pair<uint32_t, uint32_t>(static_cast<uint32_t>(step_targets_.size()),
                                                     static_cast<uint32_t>(targets.size())));
  step_targets_.insert(step_targets_.end(), targets.begin(), targets.end());
}

void StackSpace::StepAll(std::span<const int32_t> stacks, uint8_t byte,
                         std::vector<int32_t>& out) {
  out.clear();
  for (int32_t stack : stacks) {
    const size_t before = out.size();
    Step(stack, byte, out);
    const uint64_t work = out.size() - before + 1;
    work_left_ = work_left_ > work ? work_left_ - work : 0;
    if (out.size() > kMaxExpansion) SortDistinct(out);
    if (out.size() > kMaxExpansion || work_left_ == 0) {
      overflowed_ = true;
      out.clear();
      return;
    }
  }
  if (out.size() > 1) SortDistinct(out);
}

}  // namespace kvd::structured
