// `kvd document-prompts`: prints what the model reads for a sample document under the
// configured framing (the cached prefix, KVzip's scoring inputs, a question), so an operator
// can check the prompts before uploading.
#pragma once

#include "CLI/CLI.hpp"

namespace kvd::server {

void AddDocumentPromptsCommand(CLI::App& app);

}  // namespace kvd::server
