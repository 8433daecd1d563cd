// `kvd generate`: one prompt in, the generated text streamed to stdout (logs go to stderr).
#pragma once

#include "CLI/CLI.hpp"

namespace kvd::server {

// Adds the subcommand to `app`; parsing it runs the generation and exits with its status.
void AddGenerateCommand(CLI::App& app);

}  // namespace kvd::server
