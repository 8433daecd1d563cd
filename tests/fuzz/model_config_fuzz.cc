// Fuzzes engine::ParseModelConfig, the reader of a checkpoint's config.json.
#include "engine/model_config.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto config = kvd::engine::ParseModelConfig(kvd::fuzz::AsText(data, size), "config.json");
  if (config.ok()) kvd::fuzz::RequireConsistent(*config);
  return 0;
}
