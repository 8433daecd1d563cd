// Places a stored document in a chat so that its rendered text is the same prefix of every
// conversation that uses it, and splits the rendering there, so the document's KV is reusable.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "text/chat_template.h"

namespace kvd::text {

// The turn a document opens: the system turn (the default; the request may add its own
// system text after the document) or the first user turn (KVzip's published prompts and the
// bundled model's training format; the request's first user message follows the document,
// and the conversation may not have a system message, which would precede it).
enum class DocumentRole { kSystem, kUser };

// "system" or "user"; and back (InvalidArgument for anything else).
const char* DocumentRoleName(DocumentRole role);
[[nodiscard]] absl::StatusOr<DocumentRole> ParseDocumentRole(std::string_view name);

// A rendered conversation cut right after the document. The caller encodes the two parts
// separately, so the prefix's token ids (the cached ones) are a true prefix of the prompt.
struct DocumentChat {
  // From the start of the prompt up to and including the document.
  std::string prefix;
  // The rest: the request's own system text, its messages and the generation prompt.
  std::string suffix;
};

// The request's messages with the document in front. kSystem: a leading system (or developer)
// message's content becomes `document + "\n\n" + content` in a "system" message that keeps
// the message's other keys; without one, {"role": "system", "content": document} is inserted
// first. kUser: likewise with a leading user message, and a leading system or developer
// message is refused. The other messages follow unchanged. InvalidArgument unless `messages`
// is an array of objects and the joined message's content is a string.
[[nodiscard]] absl::StatusOr<nlohmann::ordered_json> MessagesWithDocument(
    std::string_view document, const nlohmann::ordered_json& messages,
    DocumentRole role = DocumentRole::kSystem);

// Renders MessagesWithDocument(document, messages) and splits it after the document.
// InvalidArgument, naming the reason, when the template cannot carry a reusable document:
// it drops, repeats or transforms the system content (prefix + suffix must equal the plain
// rendering and the prefix must end with the document verbatim), or the prefix depends on the
// request's messages (checked by rendering two other conversations with the same document).
// The prefix may still depend on `extra` (tools, a date the template prints), so a cache
// keys on the prefix, not on the document alone. Template errors pass through.
[[nodiscard]] absl::StatusOr<DocumentChat> SplitDocumentChat(
    const ChatTemplate& chat_template, std::string_view document,
    const nlohmann::ordered_json& messages, bool add_generation_prompt,
    const nlohmann::ordered_json& extra = nlohmann::ordered_json::object(),
    DocumentRole role = DocumentRole::kSystem);

}  // namespace kvd::text
