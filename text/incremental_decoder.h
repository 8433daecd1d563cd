// Streams text out of generated token ids without ever emitting a broken UTF-8 sequence: bytes
// of a character split across tokens are held back until it is complete.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "text/tokenizer.h"

namespace kvd::text {

// One per generated sequence; not thread-safe. The concatenation of everything Push and Flush
// return equals Tokenizer::Decode of all the ids pushed.
class IncrementalDecoder {
 public:
  // `tokenizer` is borrowed and must outlive the decoder.
  explicit IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = false);

  // The text that `id` completes: possibly empty while a character is still partial. Invalid
  // bytes that can no longer become valid come out as U+FFFD. An id naming no token is
  // InvalidArgument and changes nothing.
  [[nodiscard]] absl::StatusOr<std::string> Push(int32_t id);

  // Emits whatever is held back (a dangling partial character becomes U+FFFD) and resets.
  std::string Flush();

  // Bytes held back, waiting for the rest of a character (0..3).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  // Drops what the decoder's leading Strip removes from the start of the text.
  void StripLeading(std::string& text);

  const Tokenizer& tokenizer_;
  const bool skip_special_tokens_;
  bool first_token_ = true;  // no token decoded yet (FirstTokenBytesView applies)
  int leading_to_strip_;     // copies of leading_strip_char() still to drop; 0 once text began
  std::string pending_;      // the tail of an incomplete UTF-8 character
};

}  // namespace kvd::text
