// The framing documents get on this server: the `documents` section's framing, role and
// prompts resolved against whether the model has a chat template.
#pragma once

#include "absl/status/statusor.h"
#include "cache_store/kvzip/document_framing.h"
#include "documents/documents_config.h"

namespace kvd::documents {

// "auto" is chat when the model has a chat template and plain otherwise. InvalidArgument,
// naming the config key, for "chat" on a model without a template or an unknown value.
[[nodiscard]] absl::StatusOr<cache_store::DocumentFraming> ResolveDocumentFraming(
    const DocumentsConfig& config, bool model_has_chat_template);

}  // namespace kvd::documents
