// kvd: one binary, one subcommand per job.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "CLI/CLI.hpp"
#include "server/cli/bench_command.h"
#include "server/cli/chat_template_command.h"
#include "server/cli/client_command.h"
#include "server/cli/document_prompts_command.h"
#include "server/cli/generate_command.h"
#include "server/cli/hash_key_command.h"
#include "server/cli/info_command.h"
#include "server/cli/kvzip_profile_command.h"
#include "server/cli/serve_command.h"
#include "server/cli/tokenize_command.h"
#include "server/version.h"

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("kvd"));
  CLI::App app(
      "kvd serves LLaMA-family language models: a CPU and CUDA inference engine with a "
      "paged, compressible KV cache.");
  app.set_version_flag("--version", kvd::server::kVersion);
  app.require_subcommand(1);
  app.fallthrough();  // -q works before or after the subcommand
  app.add_flag_callback(
      "-q,--quiet", [] { spdlog::set_level(spdlog::level::warn); }, "Log warnings and errors only");
  kvd::server::AddGenerateCommand(app);
  kvd::server::AddBenchCommand(app);
  kvd::server::AddInfoCommand(app);
  kvd::server::AddServeCommand(app);
  kvd::server::AddHashKeyCommand(app);
  kvd::server::AddTokenizeCommands(app);
  kvd::server::AddChatTemplateCommand(app);
  kvd::server::AddDocumentPromptsCommand(app);
  kvd::server::AddKvzipProfileCommand(app);
  kvd::server::AddClientCommand(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
