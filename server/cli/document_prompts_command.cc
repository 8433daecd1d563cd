#include "server/cli/document_prompts_command.h"

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cache_store/kvzip/document_prompts.h"
#include "documents/document_framing_config.h"
#include "engine/chat_template.h"
#include "engine/model_fingerprint.h"
#include "engine/tokenizer.h"
#include "nlohmann/json.hpp"
#include "server/cli/exit_status.h"
#include "server/config/config_loader.h"

namespace kvd::server {
namespace {

struct Options {
  std::optional<std::string> model_dir;
  std::string config_file;
  std::string text = "vig: QXTV\nthe river runs by the old mill and the miller sings.\nlom: BRAE";
  std::string question = "Q:vig";
};

absl::Status Run(const Options& options) {
  ServerConfig config;
  if (!options.config_file.empty()) {
    absl::StatusOr<ServerConfig> loaded = LoadServerConfig(options.config_file);
    if (!loaded.ok()) return loaded.status();
    config = *std::move(loaded);
  }
  if (options.model_dir) config.model.path = *options.model_dir;
  if (auto status = config.Validate(); !status.ok()) return status;
  const std::filesystem::path model_dir(config.model.path);
  absl::StatusOr<std::unique_ptr<engine::Tokenizer>> tokenizer =
      engine::Tokenizer::FromFile(model_dir / "tokenizer.json");
  if (!tokenizer.ok()) return tokenizer.status();
  std::unique_ptr<engine::ChatTemplate> chat_template;
  if (auto loaded = engine::ChatTemplate::FromTokenizerConfig(model_dir); loaded.ok()) {
    chat_template = *std::move(loaded);
  } else if (loaded.status().code() != absl::StatusCode::kNotFound) {
    return loaded.status();
  }
  absl::StatusOr<cache_store::DocumentFraming> framing =
      documents::ResolveDocumentFraming(config.documents, chat_template != nullptr);
  if (!framing.ok()) return framing.status();
  const cache_store::DocumentPipeline pipeline{&*framing, chat_template.get(), tokenizer->get()};
  absl::StatusOr<cache_store::DocumentInput> input =
      cache_store::PrepareDocument(pipeline, options.text);
  if (!input.ok()) return input.status();
  absl::StatusOr<cache_store::DocumentPrompts> prompts =
      cache_store::PrepareDocumentPrompts(pipeline);
  if (!prompts.ok()) return prompts.status();
  absl::StatusOr<engine::CacheFingerprint> fingerprint =
      engine::FingerprintModel(model_dir, framing->IdentityParts());
  if (!fingerprint.ok()) return fingerprint.status();

  const auto text = [&](const std::vector<int32_t>& ids) -> absl::StatusOr<std::string> {
    return (*tokenizer)->Decode(ids, /*skip_special_tokens=*/false);
  };
  const std::vector<int32_t>& document = input->document_ids;
  std::vector<int32_t> cached = input->prefix_ids;
  cached.insert(cached.end(), document.begin(), document.end());
  const auto n = static_cast<int32_t>(document.size());
  // A later chunk as if the one before it ended halfway through the sample.
  const int32_t middle = n / 2;
  const std::pair<const char*, std::vector<int32_t>> parts[] = {
      {"document_cache", cached},
      {"scoring_first_chunk", cache_store::ReconstructionTokens(*prompts, document, 0, n)},
      {"scoring_later_chunk", cache_store::ReconstructionTokens(*prompts, document, middle, n)},
      {"question", cache_store::QuestionTokens(**tokenizer, *prompts, options.question)},
  };
  nlohmann::ordered_json out;
  out["framing"] = cache_store::FramingKindName(framing->kind);
  if (framing->kind == cache_store::FramingKind::kChat) {
    out["chat_role"] = engine::DocumentRoleName(framing->role);
  }
  for (const auto& [name, ids] : parts) {
    absl::StatusOr<std::string> decoded = text(ids);
    if (!decoded.ok()) return decoded.status();
    out[name] = {{"text", *decoded}, {"tokens", ids.size()}};
  }
  out["tokenizer_digest"] = fingerprint->tokenizer_digest;
  std::cout << out.dump(2, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace)
            << '\n';
  return absl::OkStatus();
}

}  // namespace

void AddDocumentPromptsCommand(CLI::App& app) {
  auto options = std::make_shared<Options>();
  CLI::App* command = app.add_subcommand(
      "document-prompts",
      "Print what the model reads for a sample document under the configured documents "
      "framing: the cached prefix, KVzip's scoring inputs for the first and a later chunk (each "
      "follows the cache), a question, and the digest the prompts give a cache's identity");
  command->add_option("--model", options->model_dir,
                      "The model directory (default: the config's model.path)");
  command->add_option("--config", options->config_file,
                      "YAML configuration file whose `documents` section sets the framing");
  command->add_option("--text", options->text, "The sample document");
  command->add_option("--question", options->question, "The sample question");
  command->callback([options] { ExitWith(Run(*options)); });
}

}  // namespace kvd::server
