#include "structured/constraint.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "structured/shortest_completion.h"

namespace kvd::structured {

Constraint::Constraint(Grammar grammar, std::shared_ptr<const TokenTrie> trie)
    : grammar_(std::move(grammar)), trie_(std::move(trie)), stacks_(grammar_, kMaxStacks) {
  walk_sets_.resize(trie_->max_depth() + 1);
}

Constraint::MaskStatistics Constraint::mask_statistics() const {
  base::MutexLock lock(mu_);
  return statistics_;
}

std::vector<int32_t> Constraint::InitialState() const {
  base::MutexLock lock(mu_);
  return stacks_.initial();
}

namespace {

absl::Status Spent() {
  return absl::ResourceExhaustedError(
      "the structured output's constraint is too ambiguous or too large to follow; use a "
      "simpler one");
}

}  // namespace

bool Constraint::spent() const {
  base::MutexLock lock(mu_);
  return stacks_.full();
}

absl::StatusOr<std::vector<int32_t>> Constraint::Advance(const std::vector<int32_t>& state,
                                                         std::string_view bytes) const {
  base::MutexLock lock(mu_);
  stacks_.BeginOperation(kMaxWork);
  std::vector<int32_t> current = state;
  std::vector<int32_t> next;
  for (char c : bytes) {
    stacks_.StepAll(current, static_cast<uint8_t>(c), next);
    std::swap(current, next);
    if (current.empty()) break;
  }
  if (stacks_.overflowed()) return Spent();
  return current;
}

absl::StatusOr<std::shared_ptr<const TokenMask>> Constraint::Mask(
    const std::vector<int32_t>& state, int32_t max_rest) const {
  base::MutexLock lock(mu_);
  if (stacks_.initial_cut()) return Spent();
  KVD_ASSIGN_OR_RETURN(const WalkedMask all, CachedMask(masks_, state, state, kUnboundedLength));
  if (all.longest_rest <= max_rest) return all.mask;
  // A token shortens the rest by its bytes at most: where even the longest token leaves too
  // much, no token fits and the walk is spared.
  int32_t rest_now = kUnboundedLength;
  for (int32_t stack : state) rest_now = std::min(rest_now, stacks_.shortest_completion(stack));
  if (rest_now - static_cast<int32_t>(trie_->max_depth()) > max_rest) return all.mask;
  std::vector<int32_t> key = state;
  key.push_back(max_rest);
  KVD_ASSIGN_OR_RETURN(const WalkedMask bounded,
                       CachedMask(bounded_masks_, key, state, max_rest));
  // A whole sentence may end here (the bounded mask holds the end tokens); otherwise, where no
  // token fits, the output will be cut by max_tokens whatever is sampled.
  const bool accepted = !state.empty() && state.front() == StackSpace::kAccepted;
  return accepted || bounded.mask->count() > 0 ? bounded.mask : all.mask;
}

absl::StatusOr<Constraint::WalkedMask> Constraint::CachedMask(MaskMap& masks,
                                                              const std::vector<int32_t>& key,
                                                              const std::vector<int32_t>& state,
                                                              int32_t max_rest) const {
  if (const auto it = masks.find(key); it != masks.end()) {
    ++statistics_.reused;
    return it->second;
  }
  stacks_.BeginOperation(kMaxWork);
  WalkedMask walked = WalkMask(state, max_rest);
  if (stacks_.overflowed()) return Spent();
  ++statistics_.computed;
  if (masks.size() >= kMaxCachedMasks) masks.clear();
  masks.emplace(key, walked);
  return walked;
}

Constraint::WalkedMask Constraint::WalkMask(const std::vector<int32_t>& state,
                                            int32_t max_rest) const {
  const TokenTrie& trie = *trie_;
  TokenMask mask(trie.vocab_size());
  int32_t longest_rest = 0;
  walk_sets_[0] = state;
  for (size_t node = 0; node < trie.node_count();) {
    const uint16_t depth = trie.depth(node);
    std::vector<int32_t>& reached = walk_sets_[depth];
    stacks_.StepAll(walk_sets_[depth - 1], trie.byte(node), reached);
    if (reached.empty()) {
      node = trie.subtree_end(node);
      continue;
    }
    if (!trie.tokens_at(node).empty()) {
      int32_t rest = kUnboundedLength;
      for (int32_t stack : reached) rest = std::min(rest, stacks_.shortest_completion(stack));
      if (rest <= max_rest) {
        longest_rest = std::max(longest_rest, rest);
        for (int32_t token : trie.tokens_at(node)) mask.Allow(token);
      }
    }
    ++node;
  }
  if (!state.empty() && state.front() == StackSpace::kAccepted) {
    for (int32_t token : trie.end_tokens()) mask.Allow(token);
  }
  return {std::make_shared<const TokenMask>(std::move(mask)), longest_rest};
}

ConstraintMatcher::ConstraintMatcher(std::shared_ptr<const Constraint> constraint)
    : constraint_(std::move(constraint)), state_(constraint_->InitialState()) {}

absl::StatusOr<std::shared_ptr<const TokenMask>> ConstraintMatcher::NextTokens() const {
  return NextTokens(kUnboundedLength);
}

absl::StatusOr<std::shared_ptr<const TokenMask>> ConstraintMatcher::NextTokens(
    int32_t tokens_left) const {
  if (ended_) return std::make_shared<const TokenMask>(constraint_->trie().vocab_size());
  // After this token, the rest and the end token must fit in tokens_left - 1.
  return constraint_->Mask(state_, tokens_left >= kUnboundedLength ? kUnboundedLength
                                                                   : std::max(0, tokens_left - 2));
}

absl::Status ConstraintMatcher::Accept(int32_t token) {
  const TokenTrie& trie = constraint_->trie();
  if (!ended_ && trie.is_end_token(token) && complete()) {
    ended_ = true;
    return absl::OkStatus();
  }
  const std::optional<std::string_view> text = trie.text_of(token);
  if (ended_ || !text.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("token ", token, " does not continue the constrained output"));
  }
  return AcceptText(*text);
}

absl::Status ConstraintMatcher::AcceptText(std::string_view text) {
  if (ended_) return absl::InvalidArgumentError("the constrained output has ended");
  absl::StatusOr<std::vector<int32_t>> advanced = constraint_->Advance(state_, text);
  if (!advanced.ok()) return advanced.status();
  std::vector<int32_t> next = *std::move(advanced);
  if (next.empty()) {
    return absl::InvalidArgumentError("the text does not continue the constrained output");
  }
  state_ = std::move(next);
  return absl::OkStatus();
}

bool ConstraintMatcher::complete() const {
  return !ended_ && !state_.empty() && state_.front() == StackSpace::kAccepted;
}

bool ConstraintMatcher::can_continue() const {
  return !ended_ && !state_.empty() && state_.back() != StackSpace::kAccepted;
}

}  // namespace kvd::structured
