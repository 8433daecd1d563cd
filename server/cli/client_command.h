// `kvd client`: a gRPC client of a running kvd (kvd.v1 and grpc.health.v1): generate, upload,
// models, health. Results go to stdout, diagnostics to stderr.
#pragma once

#include "CLI/CLI.hpp"

namespace kvd::server {

// Adds the subcommand and its own subcommands to `app`; parsing one runs it and exits with its
// status (a server's status as "kvd: <CODE>: <message>").
void AddClientCommand(CLI::App& app);

}  // namespace kvd::server
