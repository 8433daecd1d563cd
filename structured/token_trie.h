// The byte strings of a vocabulary's tokens as a prefix tree in preorder: a constraint's mask
// is one walk of it, skipping every subtree whose prefix the grammar rejects.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "text/tokenizer.h"

namespace kvd::structured {

// Immutable; safe to share between threads.
class TokenTrie {
 public:
  // Every token with bytes, except special added tokens and the end tokens: a constraint never
  // lets the model write a chat marker or an end token as text. `end_tokens` are the ids that end a sequence
  // (EOS and the generation config's stops), allowed by a mask only where the grammar accepts.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TokenTrie>> Create(
      const text::Tokenizer& tokenizer, std::vector<int32_t> end_tokens);

  int32_t vocab_size() const { return vocab_size_; }
  std::span<const int32_t> end_tokens() const { return end_tokens_; }
  size_t node_count() const { return bytes_.size(); }
  uint8_t byte(size_t node) const { return bytes_[node]; }
  // Depth of `node` in bytes: 1 for a token's first byte.
  uint16_t depth(size_t node) const { return depths_[node]; }
  // One past the last node of `node`'s subtree.
  uint32_t subtree_end(size_t node) const { return subtree_ends_[node]; }
  // The tokens whose bytes end at `node`.
  std::span<const int32_t> tokens_at(size_t node) const {
    return {tokens_.data() + token_offsets_[node], tokens_.data() + token_offsets_[node + 1]};
  }
  // Longest token, in bytes.
  size_t max_depth() const { return max_depth_; }
  // The bytes a token adds to the text; nullopt for tokens outside the trie (special ones,
  // empty ones), which a constraint never accepts as text.
  std::optional<std::string_view> text_of(int32_t token) const {
    if (token < 0 || token >= vocab_size_ || !has_text_[token]) return std::nullopt;
    return std::string_view(text_bytes_).substr(text_offsets_[token],
                                                text_offsets_[token + 1] - text_offsets_[token]);
  }
  bool is_end_token(int32_t token) const {
    return std::binary_search(end_tokens_.begin(), end_tokens_.end(), token);
  }

 private:
  int32_t vocab_size_ = 0;
  std::vector<int32_t> end_tokens_;
  std::vector<uint8_t> bytes_;
  std::vector<uint16_t> depths_;
  std::vector<uint32_t> subtree_ends_;
  std::vector<uint32_t> token_offsets_;  // node_count() + 1
  std::vector<int32_t> tokens_;
  size_t max_depth_ = 0;
  std::string text_bytes_;
  std::vector<uint32_t> text_offsets_;  // vocab_size_ + 1
  std::vector<bool> has_text_;
};

}  // namespace kvd::structured
