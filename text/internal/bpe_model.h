// The BPE model of a tokenizer.json: vocabulary, merge ranks, and the merge loop that turns one
// pre-token into token ids (lowest rank first, leftmost on ties, as Hugging Face's BPE does).
// Byte-level vocabularies start from one symbol per byte; others (SentencePiece-style) from one
// per character, with byte_fallback's <0xXX> tokens or the unknown token for characters outside
// the vocab.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "text/internal/bpe_word_cache.h"

namespace kvd::text::internal {

struct BpeModelConfig {
  std::vector<std::pair<std::string, int32_t>> vocab;  // token (as spelled in the vocab) → id
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  bool ignore_merges = false;  // a pre-token that is itself in the vocab becomes that one token
  bool byte_level = true;      // tokens are spelled in GPT-2's byte alphabet
  bool byte_fallback = false;  // a character outside the vocab becomes its <0xXX> byte tokens
  std::string unk_token;       // what other unknown characters become; empty: they are dropped
  bool fuse_unk = false;       // consecutive unknown characters become one unknown token
  // Ids must lie in [0, id_limit): the vocab size plus the number of added tokens, so added
  // tokens may fill gaps.
  int32_t id_limit = 0;
};

class BpeModel {
 public:
  using Symbols = absl::InlinedVector<int32_t, 32>;

  // Validates the vocab (ids in range, unique; for a byte-level one, all 256 byte symbols
  // present), the unknown token and the merges (every token known). `source_name` prefixes
  // error messages.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<BpeModel>> Create(
      BpeModelConfig config, std::string_view source_name);

  // Appends the ids of one pre-token, given as raw bytes (UTF-8 text unless byte-level).
  // Thread-safe.
  void EncodeWord(std::string_view word, std::vector<int32_t>* ids) const;

  // The two merge strategies EncodeWord picks between by length (scan for short words, a
  // priority queue for long ones); public so tests can check they agree.
  Symbols ByteSymbols(std::string_view word) const;
  void MergeByScan(Symbols& symbols) const;
  void MergeByQueue(Symbols& symbols) const;

  // One past the largest model id (ids below it may be unused where added tokens fill gaps).
  int32_t id_end() const { return static_cast<int32_t>(tokens_.size()); }
  bool HasToken(int32_t id) const { return id >= 0 && id < id_end() && tokens_[id].present; }
  // The vocab spelling of a present token.
  const std::string& symbol(int32_t id) const { return tokens_[id].symbol; }
  std::optional<int32_t> SymbolToId(std::string_view symbol) const;

 private:
  struct Token {
    std::string symbol;
    bool present = false;
  };
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  static uint64_t PairKey(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  const Merge* FindMerge(int32_t left, int32_t right) const {
    const auto it = merges_.find(PairKey(left, right));
    return it == merges_.end() ? nullptr : &it->second;
  }

  BpeModel() = default;
  // The starting symbols of a word in a vocabulary that is not byte-level.
  Symbols CharacterSymbols(std::string_view word) const;

  std::vector<Token> tokens_;
  absl::flat_hash_map<std::string, int32_t> symbol_to_id_;
  absl::flat_hash_map<uint64_t, Merge> merges_;
  std::array<int32_t, 256> byte_ids_{};  // byte-level: the symbol of each byte
  // Not byte-level: <0xXX> tokens (-1 where absent) and single-character tokens.
  std::array<int32_t, 256> fallback_ids_{};
  absl::flat_hash_map<char32_t, int32_t> char_ids_;
  bool ignore_merges_ = false;
  bool byte_level_ = true;
  bool byte_fallback_ = false;
  int32_t unk_id_ = -1;
  bool fuse_unk_ = false;
  mutable BpeWordCache cache_;  // a memo: filling it does not change what Encode returns
};

}  // namespace kvd::text::internal
