// The decoder of a tokenizer.json (ByteLevel, or a chain of Replace, Metaspace, Strip,
// ByteFallback, Fuse), reduced to what streaming needs: the bytes each token contributes, the
// first token's bytes where a Metaspace decoder treats it specially, and how many leading
// characters a Strip after Fuse removes from the whole text.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kvd::text::internal {

// One decoder, as read from tokenizer.json.
struct DecoderStep {
  enum class Kind { kByteLevel, kReplace, kMetaspace, kByteFallback, kFuse, kStrip };
  Kind kind = Kind::kByteLevel;
  std::string pattern;  // kReplace: literal to replace; kMetaspace: the replacement character
  std::string content;  // kReplace: what replaces it; kStrip: the character to strip
  bool metaspace_strips_first = true;  // kMetaspace: prepend_scheme is not "never"
  int strip_start = 0;                 // kStrip: at most this many `content` at the start
  int strip_stop = 0;                  // kStrip: ... and at the end
  std::string json_path;
};

class TokenDecoder {
 public:
  TokenDecoder() = default;

  // Checks that the chain is one kvd reproduces exactly: ByteLevel alone, or per-token steps
  // (Replace, Metaspace, Strip) then optionally ByteFallback, then optionally Fuse followed by a
  // Strip of leading characters. Anything else is Unimplemented.
  [[nodiscard]] static absl::StatusOr<TokenDecoder> Create(std::vector<DecoderStep> steps,
                                                           std::string_view source_name);

  bool byte_level() const { return byte_level_; }

  // The bytes a token spelled `token` contributes anywhere but first in the decoded text.
  std::string Bytes(std::string_view token) const { return Transform(token, false); }
  // The bytes it contributes as the first decoded token; nullopt when that is Bytes.
  std::optional<std::string> FirstBytes(std::string_view token) const;

  // Decoded text loses up to `leading_strip_count()` copies of `leading_strip_char()` at its start.
  int leading_strip_count() const { return leading_strip_count_; }
  const std::string& leading_strip_char() const { return leading_strip_char_; }

 private:
  std::string Transform(std::string_view token, bool first) const;

  std::vector<DecoderStep> per_token_;  // applied in order to each token's spelling
  bool byte_level_ = false;
  bool byte_fallback_ = false;
  bool first_differs_ = false;
  int leading_strip_count_ = 0;
  std::string leading_strip_char_;
};

}  // namespace kvd::text::internal
