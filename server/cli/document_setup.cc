#include "server/cli/document_setup.h"

#include <utility>

#include "documents/document_framing_config.h"
#include "server/config/config_loader.h"

namespace kvd::server {

absl::StatusOr<std::unique_ptr<DocumentSetup>> LoadDocumentSetup(
    const std::optional<std::string>& model_dir, const std::string& config_file) {
  auto setup = std::make_unique<DocumentSetup>();
  if (!config_file.empty()) {
    absl::StatusOr<ServerConfig> loaded = LoadServerConfig(config_file);
    if (!loaded.ok()) return loaded.status();
    setup->config = *std::move(loaded);
  }
  if (model_dir) setup->config.model.path = *model_dir;
  if (auto status = setup->config.Validate(); !status.ok()) return status;
  setup->model_dir = setup->config.model.path;
  absl::StatusOr<std::unique_ptr<text::Tokenizer>> tokenizer =
      text::Tokenizer::FromFile(setup->model_dir / "tokenizer.json");
  if (!tokenizer.ok()) return tokenizer.status();
  setup->tokenizer = *std::move(tokenizer);
  if (auto loaded = text::ChatTemplate::FromTokenizerConfig(setup->model_dir); loaded.ok()) {
    setup->chat_template = *std::move(loaded);
  } else if (loaded.status().code() != absl::StatusCode::kNotFound) {
    return loaded.status();
  }
  absl::StatusOr<cache_store::DocumentFraming> framing =
      documents::ResolveDocumentFraming(setup->config.documents, setup->chat_template != nullptr);
  if (!framing.ok()) return framing.status();
  setup->framing = *std::move(framing);
  absl::StatusOr<cache_store::DocumentPrompts> prompts =
      cache_store::PrepareDocumentPrompts(setup->pipeline());
  if (!prompts.ok()) return prompts.status();
  setup->prompts = *std::move(prompts);
  absl::StatusOr<engine::CacheFingerprint> fingerprint =
      engine::FingerprintModel(setup->model_dir, setup->framing.IdentityParts());
  if (!fingerprint.ok()) return fingerprint.status();
  setup->fingerprint = *std::move(fingerprint);
  return setup;
}

}  // namespace kvd::server
