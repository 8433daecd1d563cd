#include "cache_store/kvzip/document_framing.h"

#include "base/enum_names.h"

namespace kvd::cache_store {

namespace {

constexpr auto kFramingKindNames = base::MakeEnumNames<FramingKind>({
    {FramingKind::kChat, "chat"},
    {FramingKind::kPlain, "plain"},
});

}  // namespace

const char* FramingKindName(FramingKind kind) { return kFramingKindNames.Name(kind).data(); }

absl::StatusOr<FramingKind> ParseFramingKind(std::string_view name) {
  return kFramingKindNames.Parse(name, "framing");
}

std::vector<std::string> DocumentFraming::IdentityParts() const {
  if (kind == FramingKind::kPlain) {
    return {"plain", repeat_prompt, repeat_from_prompt,
            answer_prefix.value_or(std::string(kDefaultPlainAnswerPrefix))};
  }
  if (repeat_prompt == kDefaultRepeatPrompt && repeat_from_prompt == kDefaultRepeatFromPrompt &&
      !answer_prefix.has_value()) {
    return {text::DocumentRoleName(role)};
  }
  std::vector<std::string> parts = {"chat", text::DocumentRoleName(role), repeat_prompt,
                                    repeat_from_prompt};
  // The template's own answer prefix is digested with the template.
  if (answer_prefix.has_value()) parts.insert(parts.end(), {"answer_prefix", *answer_prefix});
  return parts;
}

}  // namespace kvd::cache_store
