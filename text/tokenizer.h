// Text ↔ token ids for BPE models loaded from a Hugging Face tokenizer.json, following the
// `tokenizers` library's encode and decode: byte-level ones (GPT-2, Llama 3, Qwen2/3, Mistral
// Nemo) and SentencePiece-style ones (Llama 2, Mistral 7B: Metaspace, byte_fallback). Regex
// classes (\p{L}, \s...) use PCRE2's Unicode tables and normalization ICU's, so characters
// added by newer Unicode versions may split differently. Single sequences only (no pairs,
// offsets or truncation).
//
// Supported: model BPE (merges as "a b" or ["a", "b"], ignore_merges, byte_fallback, unk_token,
// fuse_unk); added tokens (special or not; single_word, lstrip, rstrip, normalized); normalizers
// NFC, NFD, NFKC, NFKD, Lowercase, Strip, Prepend, Replace and Sequence; pre-tokenizers
// ByteLevel (last), Split, Digits, Metaspace and Sequence; decoders ByteLevel, or Replace /
// Metaspace / Strip per token, then ByteFallback, then Fuse and a leading Strip; post-processors
// TemplateProcessing, ByteLevel and Sequence. Anything else is refused at load time with an
// Unimplemented status that names it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

namespace kvd::text {

namespace internal {
class AddedTokenMatcher;
class BpeModel;
class Normalizer;
class PreTokenizer;
class TokenDecoder;
}  // namespace internal

// Immutable after loading; every method is safe to call from many threads at once.
class Tokenizer {
 public:
  // Reads and parses `path`. NotFound or another I/O code when it cannot be read; otherwise as
  // FromJson, with errors naming the path.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Tokenizer>> FromFile(
      const std::filesystem::path& path);
  // Parses a tokenizer.json document; `source_name` starts every error message. InvalidArgument
  // for a malformed or inconsistent file, Unimplemented for features kvd does not support.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Tokenizer>> FromJson(
      std::string_view json, std::string_view source_name);

  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Text → ids, as HF's `tokenizer.encode(text, add_special_tokens=...)`: added tokens are
  // matched literally first, the rest is normalized, pre-tokenized and merged by BPE rank;
  // add_special_tokens applies the post-processor's template (e.g. BOS before the text).
  // Any bytes are accepted; invalid UTF-8 is encoded byte by byte.
  std::vector<int32_t> Encode(std::string_view text, bool add_special_tokens = true) const;

  // Ids → text, as HF's `tokenizer.decode`: the concatenated token bytes (the first token's from
  // FirstTokenBytesView), with each maximal invalid UTF-8 sequence replaced by one U+FFFD, less
  // the leading characters a Strip decoder removes. skip_special_tokens drops added tokens marked
  // special. An id that names no token is InvalidArgument.
  [[nodiscard]] absl::StatusOr<std::string> Decode(std::span<const int32_t> ids,
                                                   bool skip_special_tokens = false) const;

  // The raw bytes token `id` contributes to decoded text (possibly part of a UTF-8 character:
  // " hello" for "▁hello", 0x0A for "<0x0A>"); for an added token of a byte-level vocab, its
  // content. InvalidArgument when no token has that id.
  [[nodiscard]] absl::StatusOr<std::string> TokenBytes(int32_t id) const;
  // TokenBytes without the copy: the view lives as long as the tokenizer.
  [[nodiscard]] absl::StatusOr<std::string_view> TokenBytesView(int32_t id) const;
  // The bytes `id` contributes when it is the first token decoded: TokenBytesView, except under
  // a Metaspace decoder, which drops the first token's metaspaces.
  [[nodiscard]] absl::StatusOr<std::string_view> FirstTokenBytesView(int32_t id) const;
  // Decoded text loses up to leading_strip_count() copies of leading_strip_char() at its start
  // (a Strip decoder after Fuse, as Llama 2's drops the space its normalizer prepends).
  int leading_strip_count() const { return leading_strip_count_; }
  const std::string& leading_strip_char() const { return leading_strip_char_; }

  // One past the largest id of the model vocab and the added tokens.
  int32_t vocab_size() const { return vocab_size_; }
  // The id of a token spelled as in the vocab (byte-level alphabet) or an added token's content.
  std::optional<int32_t> TokenToId(std::string_view token) const;
  // The vocab spelling of a token (an added token's content); nullopt when no token has `id`.
  std::optional<std::string> IdToToken(int32_t id) const;
  // Whether `id` is an added token marked special (BOS, EOS, chat markers...).
  bool IsSpecial(int32_t id) const;
  // The ids the post-processor adds before / after the text when add_special_tokens is set.
  std::span<const int32_t> template_prefix() const { return template_prefix_; }
  std::span<const int32_t> template_suffix() const { return template_suffix_; }

 private:
  // What an id stands for, when it is an added token.
  struct AddedInfo {
    std::string content;
    std::string bytes;  // what it decodes to
    bool special = false;
  };

  Tokenizer();
  // Bytes of `id`, or null when no token has it.
  const std::string* FindTokenBytes(int32_t id) const;

  std::unique_ptr<internal::BpeModel> model_;
  std::unique_ptr<internal::AddedTokenMatcher> added_matcher_;
  std::unique_ptr<internal::Normalizer> normalizer_;
  std::unique_ptr<internal::PreTokenizer> pre_tokenizer_;
  std::vector<std::string> model_token_bytes_;  // by model id; empty for absent ids
  absl::flat_hash_map<int32_t, std::string> first_token_bytes_;  // where they differ
  int leading_strip_count_ = 0;
  std::string leading_strip_char_;
  absl::flat_hash_map<int32_t, AddedInfo> added_by_id_;
  absl::flat_hash_map<std::string, int32_t> added_by_content_;
  std::vector<int32_t> template_prefix_;
  std::vector<int32_t> template_suffix_;
  int32_t vocab_size_ = 0;
};

}  // namespace kvd::text
