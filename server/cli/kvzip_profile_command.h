// `kvd kvzip-profile`: measures a model's KVzip head profile from sample texts (each scored by
// KVzip under the configured framing) and writes it where documents.head_profile can name it,
// which enables the one-prefill upload method kvzip_heads.
#pragma once

#include "CLI/CLI.hpp"

namespace kvd::server {

void AddKvzipProfileCommand(CLI::App& app);

}  // namespace kvd::server
