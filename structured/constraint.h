// A compiled constraint and the matcher of one sequence under it. A Constraint is shared by
// every request with the same constraint text (the compile cache) and remembers the token mask
// of each matcher state it has met, so a mask is walked out of the vocabulary once per state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "structured/grammar.h"
#include "structured/stack_space.h"
#include "structured/token_mask.h"
#include "structured/token_trie.h"

namespace kvd::structured {

// Thread-safe: matchers on several threads may share one.
class Constraint {
 public:
  // Masks remembered per constraint, and as many bounded by a token budget (a mask is
  // vocab_size / 8 bytes: 16 KB for 128,256 tokens).
  static constexpr size_t kMaxCachedMasks = 512;
  // Distinct matcher stacks per constraint; a sequence that needs more fails.
  static constexpr size_t kMaxStacks = 1 << 20;
  // Stack transitions one mask walk or one advance may take (a typical walk takes well under a
  // million; an ambiguous grammar could take without end).
  static constexpr uint64_t kMaxWork = uint64_t{1} << 27;

  Constraint(Grammar grammar, std::shared_ptr<const TokenTrie> trie);

  const Grammar& grammar() const { return grammar_; }
  const TokenTrie& trie() const { return *trie_; }

  struct MaskStatistics {
    uint64_t computed = 0;  // masks walked out of the vocabulary
    uint64_t reused = 0;    // masks found remembered
  };
  MaskStatistics mask_statistics() const;
  // Whether its matcher's state space is spent: new sequences should use a fresh compile.
  bool spent() const;

 private:
  friend class ConstraintMatcher;

  // A state's mask, and the most bytes any allowed token leaves to the shortest whole sentence.
  struct WalkedMask {
    std::shared_ptr<const TokenMask> mask;
    int32_t longest_rest = 0;
  };

  std::vector<int32_t> InitialState() const;
  // The state after `bytes` from `state`; empty when the grammar rejects them.
  // ResourceExhausted when a limit cut it short.
  absl::StatusOr<std::vector<int32_t>> Advance(const std::vector<int32_t>& state,
                                               std::string_view bytes) const;
  // The tokens allowed from `state` after which the shortest whole sentence is at most
  // `max_rest` bytes away (kUnboundedLength: every allowed token). Where no token but an end
  // token would fit, the tokens allowed without the bound.
  absl::StatusOr<std::shared_ptr<const TokenMask>> Mask(const std::vector<int32_t>& state,
                                                        int32_t max_rest) const;
  using MaskMap = absl::flat_hash_map<std::vector<int32_t>, WalkedMask>;
  // The mask of `state` under `max_rest`, walked now unless `masks` holds it under `key`.
  absl::StatusOr<WalkedMask> CachedMask(MaskMap& masks, const std::vector<int32_t>& key,
                                        const std::vector<int32_t>& state, int32_t max_rest) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  WalkedMask WalkMask(const std::vector<int32_t>& state, int32_t max_rest) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Grammar grammar_;
  const std::shared_ptr<const TokenTrie> trie_;
  mutable base::Mutex mu_;
  mutable StackSpace stacks_ ABSL_GUARDED_BY(mu_);
  // By state; bounded masks apart (by state and max_rest), so that the last tokens of many
  // sequences never push out the masks every step uses.
  mutable MaskMap masks_ ABSL_GUARDED_BY(mu_);
  mutable MaskMap bounded_masks_ ABSL_GUARDED_BY(mu_);
  mutable MaskStatistics statistics_ ABSL_GUARDED_BY(mu_);
  mutable std::vector<std::vector<int32_t>> walk_sets_ ABSL_GUARDED_BY(mu_);
};

// The position of one sequence's output in a constraint. Not synchronised: one owner.
class ConstraintMatcher {
 public:
  explicit ConstraintMatcher(std::shared_ptr<const Constraint> constraint);

  // The tokens allowed next: those whose bytes keep the text a prefix of a sentence, and the
  // end tokens where the text is a whole sentence. After an end token, none.
  // ResourceExhausted when the constraint's state space is spent.
  [[nodiscard]] absl::StatusOr<std::shared_ptr<const TokenMask>> NextTokens() const;
  // The same when at most `tokens_left` tokens may still be sampled, this one and the end token
  // included: only the tokens after which the shortest rest of a sentence still fits, a byte
  // a token (so the output ends whole rather than cut by max_tokens), wherever any does.
  [[nodiscard]] absl::StatusOr<std::shared_ptr<const TokenMask>> NextTokens(
      int32_t tokens_left) const;
  // Moves past `token`. InvalidArgument, leaving the matcher as it was, when the constraint
  // does not allow it.
  [[nodiscard]] absl::Status Accept(int32_t token);
  // Moves past text written without tokens (a forced prefix). InvalidArgument as Accept.
  [[nodiscard]] absl::Status AcceptText(std::string_view text);

  // Whether the text so far is a whole sentence (an end token may follow).
  bool complete() const;
  // Whether any byte may follow the text so far.
  bool can_continue() const;
  // Whether an end token was accepted.
  bool ended() const { return ended_; }

 private:
  std::shared_ptr<const Constraint> constraint_;
  std::vector<int32_t> state_;
  bool ended_ = false;
};

}  // namespace kvd::structured
