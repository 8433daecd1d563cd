// `kvd hash-key`: prints the SHA-256 digest of an API key, the form tenants' keys take in the
// configuration file.
#pragma once

#include "CLI/CLI.hpp"

namespace kvd::server {

void AddHashKeyCommand(CLI::App& app);

}  // namespace kvd::server
