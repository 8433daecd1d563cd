#include "server/core/chat_system_prefix.h"

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"

namespace kvd::server {
namespace {

using json = nlohmann::json;

bool IsSystemRole(const json& message) {
  if (!message.is_object()) return false;
  const auto role = message.find("role");
  return role != message.end() && role->is_string() && (*role == "system" || *role == "developer");
}

// A message's content without surrounding whitespace (templates often trim it); "" when it
// has none.
std::string_view StrippedContent(const json& message) {
  const auto content = message.find("content");
  if (content == message.end() || !content->is_string()) return {};
  const absl::string_view stripped =
      absl::StripAsciiWhitespace(content->get_ref<const std::string&>());
  return std::string_view(stripped.data(), stripped.size());
}

// Where the system text ends in `text` when the template does not render it as a prefix of its
// own: after each system message's content, looked for in order. npos when one is not found.
size_t EndOfSystemContents(const json& messages, int64_t last_system, std::string_view text) {
  size_t end = 0;
  for (int64_t i = 0; i <= last_system; ++i) {
    const json& message = messages[static_cast<size_t>(i)];
    const std::string_view content = StrippedContent(message);
    if (!IsSystemRole(message) || content.empty()) continue;
    const size_t at = text.find(content, end);
    if (at == std::string_view::npos) return std::string_view::npos;
    end = at + content.size();
  }
  return end;
}

}  // namespace

int64_t LastSystemMessage(const json& messages) {
  if (!messages.is_array()) return -1;
  for (size_t i = messages.size(); i > 0; --i) {
    if (IsSystemRole(messages[i - 1])) return static_cast<int64_t>(i - 1);
  }
  return -1;
}

int32_t SystemPrefixTokens(
    const json& messages, int64_t last_system, const RenderedChat& chat,
    const text::Tokenizer& tokenizer,
    absl::FunctionRef<absl::StatusOr<std::string>(int64_t last)> render_through) {
  if (last_system < 0 || !messages.is_array() ||
      last_system >= static_cast<int64_t>(messages.size())) {
    return 0;
  }
  // The head must hold the system text: a template that renders system turns only with the
  // next user turn gives a head ("" perhaps) that is a prefix without being the system prompt.
  const std::string_view content = StrippedContent(messages[static_cast<size_t>(last_system)]);
  size_t end = std::string_view::npos;
  if (absl::StatusOr<std::string> head = render_through(last_system);
      head.ok() && chat.text.starts_with(*head) && head->find(content) != std::string::npos) {
    end = head->size();
  } else {
    end = EndOfSystemContents(messages, last_system, chat.text);
  }
  if (end == std::string_view::npos || end <= chat.prompt_offset) return 0;
  const std::vector<int32_t> head_tokens = tokenizer.Encode(
      chat.text.substr(chat.prompt_offset, end - chat.prompt_offset), /*add_special_tokens=*/false);
  const auto shared =
      std::mismatch(head_tokens.begin(), head_tokens.end(), chat.prompt.begin(), chat.prompt.end());
  return static_cast<int32_t>(shared.first - head_tokens.begin());
}

}  // namespace kvd::server
