// `kvd bench`: prefill and decode throughput of a model at several batch sizes.
#pragma once

#include "CLI/CLI.hpp"

namespace kvd::server {

void AddBenchCommand(CLI::App& app);

}  // namespace kvd::server
