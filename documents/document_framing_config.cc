#include "documents/document_framing_config.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace kvd::documents {

absl::StatusOr<cache_store::DocumentFraming> ResolveDocumentFraming(const DocumentsConfig& config,
                                                                    bool model_has_chat_template) {
  cache_store::DocumentFraming framing;
  if (config.framing == "auto") {
    framing.kind = model_has_chat_template ? cache_store::FramingKind::kChat
                                           : cache_store::FramingKind::kPlain;
  } else {
    absl::StatusOr<cache_store::FramingKind> kind = cache_store::ParseFramingKind(config.framing);
    if (!kind.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("documents.framing: ", kind.status().message()));
    }
    framing.kind = *kind;
  }
  if (framing.kind == cache_store::FramingKind::kChat && !model_has_chat_template) {
    return absl::InvalidArgumentError(
        "documents.framing: chat needs a chat template and this model has none (use plain or "
        "auto)");
  }
  absl::StatusOr<text::DocumentRole> role = text::ParseDocumentRole(config.chat_role);
  if (!role.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("documents.chat_role: ", role.status().message()));
  }
  framing.role = *role;
  if (config.repeat_prompt) framing.repeat_prompt = *config.repeat_prompt;
  if (config.repeat_from_prompt) framing.repeat_from_prompt = *config.repeat_from_prompt;
  framing.answer_prefix = config.answer_prefix;
  return framing;
}

}  // namespace kvd::documents
