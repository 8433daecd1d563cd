// UTF-8 helpers for the tokenizer: lossy decoding with the replacement policy Hugging Face
// tokenizers inherit from Rust's String::from_utf8_lossy, and the checks streaming decoding needs.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kvd::text::internal {

inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD

// Appends `bytes` to `out`, replacing each maximal invalid subsequence (Unicode's "maximal
// subpart" practice, as Rust and Python do) with one U+FFFD.
void AppendLossyUtf8(std::string_view bytes, std::string* out);

// Length (0..3) of the suffix of `bytes` that is the valid start of a UTF-8 character still
// missing bytes: what a streaming decoder must hold back.
size_t IncompleteUtf8SuffixLength(std::string_view bytes);

// Decodes the character at `text[pos]` (pos < text.size()). Returns its length in bytes and
// stores the code point, or returns 1 and stores -1 when the bytes there are not valid UTF-8.
size_t DecodeUtf8At(std::string_view text, size_t pos, char32_t* code_point);

// Decodes the last character of non-empty `text`; same conventions as DecodeUtf8At.
size_t DecodeLastUtf8(std::string_view text, char32_t* code_point);

// Unicode White_Space property (Rust's char::is_whitespace).
bool IsUnicodeWhitespace(char32_t c);

}  // namespace kvd::text::internal
