// Reads the daemon's YAML config file into a validated ServerConfig. Errors name the file, the
// line and the key path: "config.yaml:12: scheduler.max_num_seqs: must be at least 1, got 0".
#pragma once

#include <filesystem>
#include <string_view>

#include "absl/status/statusor.h"
#include "server/config/server_config.h"

namespace kvd::server {

// Parses and validates `yaml`; `source_name` names it in errors. Keys left out keep their
// defaults (an empty document gives ServerConfig{}); unknown keys, wrong types and invalid
// values are InvalidArgument. Reads the environment variables that tenants' key_env name.
[[nodiscard]] absl::StatusOr<ServerConfig> ParseServerConfig(std::string_view yaml,
                                                             std::string_view source_name);

// Reads `file` and parses it as ParseServerConfig does, naming the file as given in errors.
// NotFound when it does not exist.
[[nodiscard]] absl::StatusOr<ServerConfig> LoadServerConfig(const std::filesystem::path& file);

}  // namespace kvd::server
