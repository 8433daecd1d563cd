// Added tokens of a tokenizer.json (special tokens such as <|begin_of_text|> and any extra
// tokens): found literally in text before pre-tokenization, as Hugging Face's AddedVocabulary does.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"

namespace kvd::text::internal {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool single_word = false;  // match only when not inside a word
  bool lstrip = false;       // the match absorbs whitespace on its left
  bool rstrip = false;       // the match absorbs whitespace on its right
  bool normalized = false;   // matched in the normalized text rather than the raw text
  bool special = false;      // removed by skip_special_tokens
};

class AddedTokenMatcher {
 public:
  // Tokens with empty content are ignored.
  explicit AddedTokenMatcher(const std::vector<AddedToken>& tokens);

  using EmitFn = absl::FunctionRef<void(std::string_view text, std::optional<int32_t> id)>;

  // Split `text` into added tokens (emit(matched text, id)) and the plain text between them
  // (emit(text, nullopt)), in order; plain pieces are never empty. Each pass takes the leftmost,
  // then longest match. As in HF, the raw text is split on the tokens not marked normalized, and
  // each plain piece, once normalized, on the normalized ones. Thread-safe.
  void SplitRaw(std::string_view text, EmitFn emit) const { non_normalized_.Split(text, emit); }
  void SplitNormalized(std::string_view text, EmitFn emit) const { normalized_.Split(text, emit); }

 private:
  // One pass: the tokens of one `normalized` kind.
  class TokenSet {
   public:
    void Add(const AddedToken& token);
    void Finish();
    bool empty() const { return tokens_.empty(); }
    void Split(std::string_view text, EmitFn emit) const;

   private:
    // Leftmost, then longest token at or after `from`: its index in tokens_, or -1.
    int Find(std::string_view text, size_t from, size_t* pos) const;

    std::vector<AddedToken> tokens_;
    // Indices into tokens_ by first byte, longest content first.
    std::array<std::vector<int>, 256> by_first_byte_;
  };

  TokenSet non_normalized_;
  TokenSet normalized_;
};

}  // namespace kvd::text::internal
