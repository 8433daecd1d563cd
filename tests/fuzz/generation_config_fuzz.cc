// Fuzzes engine::LoadModelConfig's reading of generation_config.json (bos and eos ids) over the
// bundled model's config.json.
#include <stdlib.h>

#include <filesystem>

#include "engine/model_config.h"
#include "fuzz_support.h"
#include "tests/support/source_dir.h"

namespace {

// A model directory, removed at exit, whose config.json links to the bundled one and whose
// generation_config.json links to a MemoryFile holding the input.
class ModelDir {
 public:
  ModelDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kvd-fuzz-XXXXXX").string();
    kvd::fuzz::Require(mkdtemp(pattern.data()) != nullptr, "mkdtemp");
    path_ = pattern;
    std::filesystem::create_symlink(
        std::filesystem::path(kvd::test_support::SourceDir()) / "models/kvd-tiny/config.json",
        path_ / "config.json");
    std::filesystem::create_symlink(generation_config_.path(), path_ / "generation_config.json");
  }
  ~ModelDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }

  const std::filesystem::path& With(std::string_view generation_config) {
    generation_config_.Write(generation_config);
    return path_;
  }

 private:
  kvd::fuzz::MemoryFile generation_config_;
  std::filesystem::path path_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static ModelDir dir;
  auto config = kvd::engine::LoadModelConfig(dir.With(kvd::fuzz::AsText(data, size)));
  if (config.ok()) kvd::fuzz::RequireConsistent(*config);
  return 0;
}
