#include "server/cli/kvzip_profile_command.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "documents/head_profiles.h"
#include "engine/model.h"
#include "kernels/backend.h"
#include "server/cli/document_setup.h"
#include "server/cli/exit_status.h"
#include "spdlog/spdlog.h"

namespace kvd::server {
namespace {

struct Options {
  std::optional<std::string> model_dir;
  std::string config_file;
  std::vector<std::string> text_files;
  std::string out;
};

absl::StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot read sample text ", path));
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// Writes `bytes` to `path` through a temporary file beside it, so a reader never sees half.
absl::Status WriteAtomically(const std::string& path, const std::string& bytes) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (!(file << bytes) || !file.flush()) {
      return absl::UnavailableError(absl::StrCat("cannot write ", temporary));
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error)
    return absl::UnavailableError(absl::StrCat("cannot write ", path, ": ", error.message()));
  return absl::OkStatus();
}

absl::Status Run(const Options& options) {
  absl::StatusOr<std::unique_ptr<DocumentSetup>> setup =
      LoadDocumentSetup(options.model_dir, options.config_file);
  if (!setup.ok()) return setup.status();
  const DocumentSetup& loaded = **setup;
  std::vector<std::string> texts;
  for (const std::string& path : options.text_files) {
    absl::StatusOr<std::string> text = ReadText(path);
    if (!text.ok()) return text.status();
    texts.push_back(*std::move(text));
  }
  const ModelSection& section = loaded.config.model;
  auto backend = kernels::CreateBackend(
      section.backend,
      {.num_threads = section.threads, .weight_dtype = kernels::DTypeFromName(section.dtype)});
  if (!backend.ok()) return backend.status();
  auto model = engine::Model::Load(loaded.model_dir, **backend);
  if (!model.ok()) return model.status();
  absl::StatusOr<cache_store::HeadProfile> profile = documents::ProfileHeads(
      **model, loaded.pipeline(), loaded.prompts, loaded.fingerprint, texts);
  if (!profile.ok()) return profile.status();
  const std::string encoded = cache_store::EncodeHeadProfile(*profile);
  if (options.out.empty() || options.out == "-") {
    std::cout << encoded;
    return absl::OkStatus();
  }
  if (auto status = WriteAtomically(options.out, encoded); !status.ok()) return status;
  spdlog::info("KVzip head profile of {} samples ({} tokens) written to {} (digest {})",
               profile->samples, profile->sample_tokens, options.out,
               profile->Digest().substr(0, 16));
  return absl::OkStatus();
}

}  // namespace

void AddKvzipProfileCommand(CLI::App& app) {
  auto options = std::make_shared<Options>();
  CLI::App* command = app.add_subcommand(
      "kvzip-profile",
      "Measure the model's KVzip head profile (each head's highest KVzip score on sample texts, "
      "averaged) for documents.head_profile, which enables the upload method kvzip_heads");
  command->add_option("--model", options->model_dir,
                      "The model directory (default: the config's model.path)");
  command->add_option("--config", options->config_file,
                      "YAML configuration file: its documents section sets the framing and "
                      "prompts the samples are scored under, its model section the backend");
  command->add_option("--text", options->text_files, "A sample text file (repeat for more)")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("--out", options->out,
                      "Where to write the profile (default, or -: standard output)");
  command->callback([options] { ExitWith(Run(*options)); });
}

}  // namespace kvd::server
