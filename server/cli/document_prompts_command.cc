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
#include "nlohmann/json.hpp"
#include "server/cli/document_setup.h"
#include "server/cli/exit_status.h"
#include "text/chat_template.h"

namespace kvd::server {
namespace {

struct Options {
  std::optional<std::string> model_dir;
  std::string config_file;
  std::string text = "vig: QXTV\nthe river runs by the old mill and the miller sings.\nlom: BRAE";
  std::string question = "Q:vig";
};

absl::Status Run(const Options& options) {
  absl::StatusOr<std::unique_ptr<DocumentSetup>> setup =
      LoadDocumentSetup(options.model_dir, options.config_file);
  if (!setup.ok()) return setup.status();
  const DocumentSetup& loaded = **setup;
  absl::StatusOr<cache_store::DocumentInput> input =
      cache_store::PrepareDocument(loaded.pipeline(), options.text);
  if (!input.ok()) return input.status();
  const cache_store::DocumentPrompts& prompts = loaded.prompts;
  const cache_store::DocumentFraming& framing = loaded.framing;

  const auto text = [&](const std::vector<int32_t>& ids) -> absl::StatusOr<std::string> {
    return loaded.tokenizer->Decode(ids, /*skip_special_tokens=*/false);
  };
  const std::vector<int32_t>& document = input->document_ids;
  std::vector<int32_t> cached = input->prefix_ids;
  cached.insert(cached.end(), document.begin(), document.end());
  const auto n = static_cast<int32_t>(document.size());
  // A later chunk as if the one before it ended halfway through the sample.
  const int32_t middle = n / 2;
  const std::pair<const char*, std::vector<int32_t>> parts[] = {
      {"document_cache", cached},
      {"scoring_first_chunk", cache_store::ReconstructionTokens(prompts, document, 0, n)},
      {"scoring_later_chunk", cache_store::ReconstructionTokens(prompts, document, middle, n)},
      {"question", cache_store::QuestionTokens(*loaded.tokenizer, prompts, options.question)},
  };
  nlohmann::ordered_json out;
  out["framing"] = cache_store::FramingKindName(framing.kind);
  if (framing.kind == cache_store::FramingKind::kChat) {
    out["chat_role"] = text::DocumentRoleName(framing.role);
  }
  for (const auto& [name, ids] : parts) {
    absl::StatusOr<std::string> decoded = text(ids);
    if (!decoded.ok()) return decoded.status();
    out[name] = {{"text", *decoded}, {"tokens", ids.size()}};
  }
  out["tokenizer_digest"] = loaded.fingerprint.tokenizer_digest;
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
