// `kvd tokenize` and `kvd detokenize`: a tokenizer.json applied to JSON lines on stdin, one
// result per line on stdout, for scripts and for checking kvd against other implementations.
#pragma once

#include "CLI/CLI.hpp"

namespace kvd::server {

// Adds both subcommands to `app`; parsing one runs it over stdin and exits with its status.
void AddTokenizeCommands(CLI::App& app);

}  // namespace kvd::server
