// What the documents commands (document-prompts, kvzip-profile) read from a model directory and
// a config file, as the server would: the tokenizer, the chat template, the document framing,
// KVzip's prompts and the model's fingerprint.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "cache_store/kvzip/document_framing.h"
#include "cache_store/kvzip/document_prompts.h"
#include "engine/model_fingerprint.h"
#include "server/config/server_config.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace kvd::server {

struct DocumentSetup {
  ServerConfig config;
  std::filesystem::path model_dir;
  std::unique_ptr<text::Tokenizer> tokenizer;
  std::unique_ptr<text::ChatTemplate> chat_template;  // null: the model has none
  cache_store::DocumentFraming framing;
  cache_store::DocumentPrompts prompts;
  engine::CacheFingerprint fingerprint;

  cache_store::DocumentPipeline pipeline() const {
    return {&framing, chat_template.get(), tokenizer.get()};
  }
};

// Loads `config_file` ("": the defaults), with `model_dir` overriding model.path, and what
// follows from it. The config's, the tokenizer's and the template's errors; the framing's
// (documents/document_framing_config.h).
[[nodiscard]] absl::StatusOr<std::unique_ptr<DocumentSetup>> LoadDocumentSetup(
    const std::optional<std::string>& model_dir, const std::string& config_file);

}  // namespace kvd::server
