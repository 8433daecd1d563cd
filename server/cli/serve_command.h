// `kvd serve`: the daemon — loads the model, starts the scheduler and the HTTP API, and runs
// until SIGINT or SIGTERM.
#pragma once

#include "CLI/CLI.hpp"

namespace kvd::server {

void AddServeCommand(CLI::App& app);

}  // namespace kvd::server
