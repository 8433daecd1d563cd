// Prompt lookup: draft tokens for speculative decoding without a draft model. The sequence's
// last n tokens are looked up in its own earlier tokens (prompt and output) and in the document
// it continues; the tokens that followed the match are the draft, which the target model then
// verifies in one step. Answers about a text copy its spans, so drafts are often right.
// Thread: any (a DocumentNgrams is immutable once built).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace kvd::scheduler::internal {

struct NgramLookup {
  int32_t min_n = 1;  // the shortest match that counts
  int32_t max_n = 4;  // the longest match tried first
};

// Where each n-gram of a stored document first occurs with a token after it, for every n of a
// lookup: a sequence continuing the document finds its match with one probe a step instead of
// a scan. Built once per document and shared by the sequences that continue it.
class DocumentNgrams {
 public:
  DocumentNgrams(std::span<const int32_t> tokens, const NgramLookup& lookup);

  // The document's token ids.
  std::span<const int32_t> tokens() const { return tokens_; }
  // Where the first occurrence of `pattern` (min_n..max_n tokens) starts; none when it does not
  // occur with a token after it.
  std::optional<size_t> First(std::span<const int32_t> pattern) const;

 private:
  std::vector<int32_t> tokens_;
  NgramLookup lookup_;
  // By n - min_n: an n-gram's hash to the start of its first occurrence.
  std::vector<std::unordered_map<uint64_t, uint32_t>> first_;
};

// Up to `max_tokens` tokens to follow `context`: for n from max_n down to min_n, the tokens
// after the latest earlier occurrence of context's last n tokens in `context` itself (for n of
// 2 or more: one repeated token of a sequence's own text predicts little), or else after their
// first occurrence in `document` (null: none). Empty when nothing matches.
std::vector<int32_t> ProposeNgramDraft(std::span<const int32_t> context,
                                       const DocumentNgrams* document, const NgramLookup& lookup,
                                       int32_t max_tokens);

}  // namespace kvd::scheduler::internal
