// `kvd chat-template`: renders chat messages read from stdin with a model's chat template, so
// prompts can be inspected and compared against other implementations.
#pragma once

#include "CLI/CLI.hpp"

namespace kvd::server {

void AddChatTemplateCommand(CLI::App& app);

}  // namespace kvd::server
