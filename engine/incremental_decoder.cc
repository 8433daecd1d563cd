#include "engine/incremental_decoder.h"

#include "engine/internal/utf8.h"

namespace kvd::engine {

IncrementalDecoder::IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(tokenizer), skip_special_tokens_(skip_special_tokens) {}

absl::StatusOr<std::string> IncrementalDecoder::Push(int32_t id) {
  absl::StatusOr<std::string_view> bytes = tokenizer_.TokenBytesView(id);
  if (!bytes.ok()) return bytes.status();
  std::string text;
  if (skip_special_tokens_ && tokenizer_.IsSpecial(id)) return text;
  pending_.append(*bytes);
  // Everything before a trailing partial character decodes the same whatever follows, because
  // UTF-8 repair is self-synchronising.
  const size_t hold = internal::IncompleteUtf8SuffixLength(pending_);
  internal::AppendLossyUtf8(std::string_view(pending_).substr(0, pending_.size() - hold), &text);
  pending_.erase(0, pending_.size() - hold);
  return text;
}

std::string IncrementalDecoder::Flush() {
  std::string text;
  internal::AppendLossyUtf8(pending_, &text);
  pending_.clear();
  return text;
}

}  // namespace kvd::engine
