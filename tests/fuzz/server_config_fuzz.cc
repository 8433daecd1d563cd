// Fuzzes server::ParseServerConfig, the reader of the daemon's YAML config (yaml-cpp and the
// typed YamlMapReader); what it accepts must pass Validate.
#include "fuzz_support.h"
#include "server/config/config_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto config = kvd::server::ParseServerConfig(kvd::fuzz::AsText(data, size), "config.yaml");
  if (config.ok()) kvd::fuzz::Require(config->Validate().ok(), "accepted config fails Validate");
  return 0;
}
