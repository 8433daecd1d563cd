// How many of a chat prompt's tokens are its system prompt: the rendering up to and including
// the last system (or developer) turn, which KeepKV must never merge (its protected_prefix).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "text/tokenizer.h"

namespace kvd::server {

// The index of the last message whose role is system or developer; -1 when none is.
int64_t LastSystemMessage(const nlohmann::json& messages);

// The conversation as the prompt was made from it.
struct RenderedChat {
  // The whole rendering (with a stored document: its prefix and the suffix).
  std::string_view text;
  // Where the prompt's text starts in `text`: 0, or after a stored document's prefix.
  size_t prompt_offset = 0;
  // The prompt's tokens: text[prompt_offset:] encoded without special tokens added.
  std::span<const int32_t> prompt;
};

// The number of `chat.prompt` tokens up to the end of message `last_system`'s turn, found by
// rendering messages [0, last_system] without a generation prompt (`render_through`) when that
// is a prefix of the whole rendering and holds the message's text; when it is not (a template
// that renders the system text only inside the first user turn) or fails, up to the end of the
// system messages' own text in the rendering. Counted as the tokens the prompt shares with that
// text encoded alone, so that a token straddling the boundary is not counted. 0 when the system
// text cannot be found or lies inside a document's prefix.
int32_t SystemPrefixTokens(
    const nlohmann::json& messages, int64_t last_system, const RenderedChat& chat,
    const text::Tokenizer& tokenizer,
    absl::FunctionRef<absl::StatusOr<std::string>(int64_t last)> render_through);

}  // namespace kvd::server
