// Writes safetensors files: used by the tools that make or convert checkpoints and by tests.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace kvd::engine {

struct TensorToWrite {
  std::string name;
  std::string dtype;  // "F32", "BF16", "F16"
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  // little-endian, row-major
};

// Writes `tensors` (in name order, header padded to 8 bytes) to `path` atomically: a temporary
// file renamed into place.
[[nodiscard]] absl::Status WriteSafetensors(const std::filesystem::path& path,
                                            const std::vector<TensorToWrite>& tensors);

}  // namespace kvd::engine
