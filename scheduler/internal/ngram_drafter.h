// Prompt lookup: draft tokens for speculative decoding without a draft model. The sequence's
// last n tokens are looked up in its own earlier tokens (prompt and output) and in the document
// it continues; the tokens that followed the match are the draft, which the target model then
// verifies in one step. Answers about a text copy its spans, so drafts are often right.
// Thread: any (no state).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace kvd::scheduler::internal {

struct NgramLookup {
  int32_t min_n = 1;  // the shortest match that counts
  int32_t max_n = 4;  // the longest match tried first
};

// Up to `max_tokens` tokens to follow `context`: for n from max_n down to min_n, the tokens
// after the latest earlier occurrence of context's last n tokens in `context` itself (for n of
// 2 or more: one repeated token of a sequence's own text predicts little), or else after their
// first occurrence in `document`. Empty when nothing matches.
std::vector<int32_t> ProposeNgramDraft(std::span<const int32_t> context,
                                       std::span<const int32_t> document, const NgramLookup& lookup,
                                       int32_t max_tokens);

}  // namespace kvd::scheduler::internal
