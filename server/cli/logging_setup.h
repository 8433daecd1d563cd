// Applies the `logging` section: the level, and text or JSON lines on stderr.
#pragma once

#include "absl/status/status.h"
#include "server/config/server_config.h"

namespace kvd::server {

[[nodiscard]] absl::Status ConfigureLogging(const LoggingConfig& config);

}  // namespace kvd::server
