// `kvd info`: what this build is and which devices and model it sees.
#pragma once

#include "CLI/CLI.hpp"

namespace kvd::server {

void AddInfoCommand(CLI::App& app);

}  // namespace kvd::server
