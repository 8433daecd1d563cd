// How a document is framed, for its cache and for its scoring: in a turn of the model's chat
// template (chat models) or as plain text after BOS (base models), and the prompts KVzip's
// reconstruction and a SnapKV question put after it. A cache is reused only under the framing
// it was computed with (IdentityParts goes into its identity).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "text/chat_document.h"

namespace kvd::cache_store {

// kChat: the cache is the chat template's text up to and including the document, which opens
// the turn of `role`. kPlain: the cache is BOS + the document; completions continue it.
enum class FramingKind { kChat, kPlain };

// "chat" or "plain"; and back (InvalidArgument for anything else).
const char* FramingKindName(FramingKind kind);
[[nodiscard]] absl::StatusOr<FramingKind> ParseFramingKind(std::string_view name);

// The published method's wording, which the bundled model was trained with.
inline constexpr std::string_view kDefaultRepeatPrompt = "\n\nRepeat the previous context exactly.";
inline constexpr std::string_view kDefaultRepeatFromPrompt =
    "\n\nRepeat the part of the previous context exactly, starting with ";
// What the published code puts after a request to a model it has no template for.
inline constexpr std::string_view kDefaultPlainAnswerPrefix = "\n\nAnswer: ";

struct DocumentFraming {
  FramingKind kind = FramingKind::kChat;
  text::DocumentRole role = text::DocumentRole::kUser;  // kChat: the turn the document opens
  // Follows the document in the scoring input of the first chunk.
  std::string repeat_prompt{kDefaultRepeatPrompt};
  // Follows the document in the scoring input of every later chunk, before the last tokens
  // of the chunk before it.
  std::string repeat_from_prompt{kDefaultRepeatFromPrompt};
  // Text between a request (a reconstruction, a question) and its answer. Unset: kChat, the
  // template's end of turn and generation prompt; kPlain, kDefaultPlainAnswerPrefix.
  std::optional<std::string> answer_prefix;

  // What a cache's identity digests of the framing. kChat with the built-in prompts and the
  // template's answer prefix is the role's name alone, as caches stored before the prompts
  // were configurable have it; any other framing adds every prompt.
  std::vector<std::string> IdentityParts() const;

  bool operator==(const DocumentFraming&) const = default;
};

}  // namespace kvd::cache_store
