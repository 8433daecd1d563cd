// How CLI subcommands end: a Status becomes an error line on stderr and an exit code.
#pragma once

#include "absl/status/status.h"

namespace kvd::server {

// Exits the process: 0 for OK, otherwise prints "kvd: <message>" to stderr and exits 1
// (2 for invalid arguments, as command-line tools do).
[[noreturn]] void ExitWith(const absl::Status& status);

}  // namespace kvd::server
