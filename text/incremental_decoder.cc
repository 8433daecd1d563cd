#include "text/incremental_decoder.h"

#include "text/internal/utf8.h"

namespace kvd::text {

IncrementalDecoder::IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(tokenizer),
      skip_special_tokens_(skip_special_tokens),
      leading_to_strip_(tokenizer.leading_strip_count()) {}

absl::StatusOr<std::string> IncrementalDecoder::Push(int32_t id) {
  absl::StatusOr<std::string_view> bytes =
      first_token_ ? tokenizer_.FirstTokenBytesView(id) : tokenizer_.TokenBytesView(id);
  if (!bytes.ok()) return bytes.status();
  std::string text;
  if (skip_special_tokens_ && tokenizer_.IsSpecial(id)) return text;
  first_token_ = false;
  pending_.append(*bytes);
  // Everything before a trailing partial character decodes the same whatever follows, because
  // UTF-8 repair is self-synchronising.
  const size_t hold = internal::IncompleteUtf8SuffixLength(pending_);
  internal::AppendLossyUtf8(std::string_view(pending_).substr(0, pending_.size() - hold), &text);
  pending_.erase(0, pending_.size() - hold);
  StripLeading(text);
  return text;
}

std::string IncrementalDecoder::Flush() {
  std::string text;
  internal::AppendLossyUtf8(pending_, &text);
  pending_.clear();
  StripLeading(text);
  return text;
}

void IncrementalDecoder::StripLeading(std::string& text) {
  if (leading_to_strip_ == 0 || text.empty()) return;
  const std::string& c = tokenizer_.leading_strip_char();
  size_t strip = 0;
  while (leading_to_strip_ > 0 && !c.empty() && text.compare(strip, c.size(), c) == 0) {
    strip += c.size();
    --leading_to_strip_;
  }
  text.erase(0, strip);
  // Decode strips only at the very start: once any other text came out, nothing more goes.
  if (!text.empty()) leading_to_strip_ = 0;
}

}  // namespace kvd::text
