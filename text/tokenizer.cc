#include "text/tokenizer.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "text/internal/absl_string_view.h"
#include "text/internal/added_tokens.h"
#include "text/internal/bpe_model.h"
#include "text/internal/bpe_tokenizer_json.h"
#include "text/internal/normalizer.h"
#include "text/internal/pretokenize.h"
#include "text/internal/token_decoder.h"
#include "text/internal/utf8.h"

namespace kvd::text {
Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromFile(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return absl::NotFoundError(absl::StrCat(path.string(), ": no such file"));
  }
  if (!std::filesystem::is_regular_file(path, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(path.string(), ": not a regular file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::PermissionDeniedError(absl::StrCat(path.string(), ": cannot open"));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat(path.string(), ": read failed"));
  return FromJson(contents.str(), path.string());
}

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromJson(std::string_view json,
                                                               std::string_view source_name) {
  absl::StatusOr<internal::TokenizerSpec> spec = internal::ParseTokenizerJson(json, source_name);
  if (!spec.ok()) return spec.status();
  // Debian's Abseil keeps its own string_view, which StrCat does not take from std.
  const std::string source(source_name);
  auto error = [&](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", parts...));
  };

  std::unique_ptr<Tokenizer> tokenizer(new Tokenizer());
  absl::StatusOr<internal::TokenDecoder> decoder =
      internal::TokenDecoder::Create(std::move(spec->decoder), source_name);
  if (!decoder.ok()) return decoder.status();
  if (decoder->byte_level() != spec->model.byte_level) {
    return absl::UnimplementedError(absl::StrCat(
        source, ": decoder: ",
        spec->model.byte_level ? "a ByteLevel pre-tokenizer needs the ByteLevel decoder"
                               : "the ByteLevel decoder needs a ByteLevel pre-tokenizer"));
  }
  const int32_t id_limit = spec->model.id_limit;
  absl::StatusOr<std::unique_ptr<internal::BpeModel>> model =
      internal::BpeModel::Create(std::move(spec->model), source_name);
  if (!model.ok()) return model.status();
  tokenizer->model_ = *std::move(model);
  const internal::BpeModel& bpe = *tokenizer->model_;
  tokenizer->model_token_bytes_.resize(bpe.id_end());
  for (int32_t id = 0; id < bpe.id_end(); ++id) {
    if (!bpe.HasToken(id)) continue;
    tokenizer->model_token_bytes_[id] = decoder->Bytes(bpe.symbol(id));
    if (std::optional<std::string> first = decoder->FirstBytes(bpe.symbol(id)); first) {
      tokenizer->first_token_bytes_.emplace(id, *std::move(first));
    }
  }
  tokenizer->leading_strip_count_ = decoder->leading_strip_count();
  tokenizer->leading_strip_char_ = decoder->leading_strip_char();

  // Added tokens: ids in range, unique, and consistent with the vocab when they are in it too
  // (as GPT-2's <|endoftext|> is).
  int32_t vocab_size = bpe.id_end();
  for (size_t i = 0; i < spec->added_tokens.size(); ++i) {
    const internal::AddedToken& token = spec->added_tokens[i];
    const std::string where = absl::StrCat("added_tokens[", i, "] (\"", token.content, "\")");
    if (token.id >= id_limit) {
      return error(where, ": id ", token.id, " is outside [0, ", id_limit,
                   ") (the vocab size plus the added tokens)");
    }
    if (bpe.HasToken(token.id) && bpe.symbol(token.id) != token.content) {
      return error(where, ": id ", token.id, " already belongs to vocab token \"",
                   bpe.symbol(token.id), "\"");
    }
    if (const std::optional<int32_t> vocab_id = bpe.SymbolToId(token.content);
        vocab_id.has_value() && *vocab_id != token.id) {
      return error(where, ": has id ", token.id, " but the vocab gives it id ", *vocab_id);
    }
    if (!tokenizer->added_by_content_.emplace(token.content, token.id).second) {
      return error(where, ": the same content appears twice in added_tokens");
    }
    vocab_size = std::max(vocab_size, token.id + 1);
  }
  tokenizer->vocab_size_ = vocab_size;
  for (size_t i = 0; i < spec->added_tokens.size(); ++i) {
    const internal::AddedToken& token = spec->added_tokens[i];
    // Byte-level decoding keeps added tokens as written, as HF's Python and JavaScript
    // tokenizers do; other decoders treat them like any token.
    std::string bytes = decoder->byte_level() ? token.content : decoder->Bytes(token.content);
    if (!decoder->byte_level()) {
      if (std::optional<std::string> first = decoder->FirstBytes(token.content); first) {
        tokenizer->first_token_bytes_.insert_or_assign(token.id, *std::move(first));
      }
    }
    const auto [it, inserted] = tokenizer->added_by_id_.try_emplace(
        token.id, AddedInfo{token.content, std::move(bytes), token.special});
    if (!inserted) {
      return error("added_tokens[", i, "] (\"", token.content, "\"): id ", token.id,
                   " is already used by added token \"", it->second.content, "\"");
    }
  }
  tokenizer->added_matcher_ = std::make_unique<internal::AddedTokenMatcher>(spec->added_tokens);

  for (const std::vector<int32_t>* ids : {&spec->template_prefix, &spec->template_suffix}) {
    for (int32_t id : *ids) {
      if (tokenizer->FindTokenBytes(id) == nullptr) {
        return error("post_processor: special token id ", id, " names no token");
      }
    }
  }
  tokenizer->template_prefix_ = std::move(spec->template_prefix);
  tokenizer->template_suffix_ = std::move(spec->template_suffix);

  absl::StatusOr<std::unique_ptr<internal::Normalizer>> normalizer =
      internal::Normalizer::Create(std::move(spec->normalizer), source_name);
  if (!normalizer.ok()) return normalizer.status();
  tokenizer->normalizer_ = *std::move(normalizer);

  absl::StatusOr<std::unique_ptr<internal::PreTokenizer>> pre_tokenizer =
      internal::PreTokenizer::Create(std::move(spec->pre_tokenizer), source_name);
  if (!pre_tokenizer.ok()) return pre_tokenizer.status();
  tokenizer->pre_tokenizer_ = *std::move(pre_tokenizer);
  return tokenizer;
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text, bool add_special_tokens) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  if (add_special_tokens) ids.assign(template_prefix_.begin(), template_prefix_.end());
  auto encode_words = [&](std::string_view piece, bool at_start) {
    pre_tokenizer_->Split(piece, at_start,
                          [&](std::string_view word) { model_->EncodeWord(word, &ids); });
  };
  std::string buffer;
  added_matcher_->SplitRaw(text, [&](std::string_view piece, std::optional<int32_t> added_id) {
    if (added_id.has_value()) {
      ids.push_back(*added_id);
      return;
    }
    const bool at_start = piece.data() == text.data();
    const std::string_view normalized =
        normalizer_->empty() ? piece : normalizer_->Apply(piece, &buffer);
    added_matcher_->SplitNormalized(
        normalized, [&](std::string_view part, std::optional<int32_t> normalized_id) {
          if (normalized_id.has_value()) {
            ids.push_back(*normalized_id);
          } else {
            encode_words(part, at_start && part.data() == normalized.data());
          }
        });
  });
  if (add_special_tokens) ids.insert(ids.end(), template_suffix_.begin(), template_suffix_.end());
  return ids;
}

const std::string* Tokenizer::FindTokenBytes(int32_t id) const {
  if (const auto it = added_by_id_.find(id); it != added_by_id_.end()) return &it->second.bytes;
  return model_->HasToken(id) ? &model_token_bytes_[id] : nullptr;
}

absl::StatusOr<std::string_view> Tokenizer::TokenBytesView(int32_t id) const {
  const std::string* bytes = FindTokenBytes(id);
  if (bytes == nullptr) {
    if (id < 0 || id >= vocab_size_) {
      return absl::InvalidArgumentError(
          absl::StrCat("token id ", id, " is out of range [0, ", vocab_size_, ")"));
    }
    return absl::InvalidArgumentError(absl::StrCat("no token has id ", id));
  }
  return std::string_view(*bytes);
}

absl::StatusOr<std::string_view> Tokenizer::FirstTokenBytesView(int32_t id) const {
  if (const auto it = first_token_bytes_.find(id); it != first_token_bytes_.end()) {
    return std::string_view(it->second);
  }
  return TokenBytesView(id);
}

absl::StatusOr<std::string> Tokenizer::TokenBytes(int32_t id) const {
  absl::StatusOr<std::string_view> bytes = TokenBytesView(id);
  if (!bytes.ok()) return bytes.status();
  return std::string(*bytes);
}

absl::StatusOr<std::string> Tokenizer::Decode(std::span<const int32_t> ids,
                                              bool skip_special_tokens) const {
  // UTF-8 repair is self-synchronising, so repairing the concatenation of all token bytes gives
  // what HF gives when it flushes the byte buffer at each added token.
  std::string bytes;
  bytes.reserve(ids.size() * 4);
  bool first = true;
  for (int32_t id : ids) {
    absl::StatusOr<std::string_view> token = TokenBytesView(id);
    if (!token.ok()) return token.status();
    if (skip_special_tokens && IsSpecial(id)) continue;
    if (first) {
      token = FirstTokenBytesView(id);
      first = false;
    }
    bytes.append(*token);
  }
  std::string text;
  internal::AppendLossyUtf8(bytes, &text);
  size_t strip = 0;
  for (int i = 0; i < leading_strip_count_ &&
                  text.compare(strip, leading_strip_char_.size(), leading_strip_char_) == 0;
       ++i) {
    strip += leading_strip_char_.size();
  }
  text.erase(0, strip);
  return text;
}

std::optional<int32_t> Tokenizer::TokenToId(std::string_view token) const {
  if (const auto it = added_by_content_.find(internal::AsAbsl(token));
      it != added_by_content_.end()) {
    return it->second;
  }
  return model_->SymbolToId(token);
}

std::optional<std::string> Tokenizer::IdToToken(int32_t id) const {
  if (const auto it = added_by_id_.find(id); it != added_by_id_.end()) return it->second.content;
  if (!model_->HasToken(id)) return std::nullopt;
  return model_->symbol(id);
}

bool Tokenizer::IsSpecial(int32_t id) const {
  const auto it = added_by_id_.find(id);
  return it != added_by_id_.end() && it->second.special;
}

}  // namespace kvd::text
