#include "cache_store/kvzip/document_framing.h"

#include "absl/strings/str_cat.h"

namespace kvd::cache_store {

const char* FramingKindName(FramingKind kind) {
  return kind == FramingKind::kChat ? "chat" : "plain";
}

absl::StatusOr<FramingKind> ParseFramingKind(std::string_view name) {
  if (name == "chat") return FramingKind::kChat;
  if (name == "plain") return FramingKind::kPlain;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown document framing '", std::string(name), "' (chat or plain)"));
}

std::vector<std::string> DocumentFraming::IdentityParts() const {
  if (kind == FramingKind::kPlain) {
    return {"plain", repeat_prompt, repeat_from_prompt,
            answer_prefix.value_or(std::string(kDefaultPlainAnswerPrefix))};
  }
  if (repeat_prompt == kDefaultRepeatPrompt && repeat_from_prompt == kDefaultRepeatFromPrompt &&
      !answer_prefix.has_value()) {
    return {engine::DocumentRoleName(role)};
  }
  std::vector<std::string> parts = {"chat", engine::DocumentRoleName(role), repeat_prompt,
                                    repeat_from_prompt};
  // The template's own answer prefix is digested with the template.
  if (answer_prefix.has_value()) parts.insert(parts.end(), {"answer_prefix", *answer_prefix});
  return parts;
}

}  // namespace kvd::cache_store
