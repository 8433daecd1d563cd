// GPT-2's byte-level alphabet: the reversible map from the 256 byte values to printable
// characters that byte-level BPE vocabularies spell their tokens with (bytes_to_unicode).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace kvd::text::internal {

// The UTF-8 spelling of the alphabet character standing for each byte ("Ġ" for 0x20).
const std::array<std::string, 256>& ByteLevelSymbols();

// Spells raw bytes in the alphabet.
std::string EncodeByteLevel(std::string_view bytes);

// The raw bytes a byte-level token stands for; nullopt when a character of `token` is outside
// the alphabet (such tokens decode to their own UTF-8 bytes, as Hugging Face's decoder does).
std::optional<std::string> DecodeByteLevel(std::string_view token);

}  // namespace kvd::text::internal
