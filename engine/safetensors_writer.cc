#include "engine/safetensors_writer.h"

#include <algorithm>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace kvd::engine {

absl::Status WriteSafetensors(const std::filesystem::path& path,
                              const std::vector<TensorToWrite>& tensors) {
  std::vector<const TensorToWrite*> ordered;
  for (const auto& tensor : tensors) ordered.push_back(&tensor);
  std::sort(ordered.begin(), ordered.end(),
            [](const auto* a, const auto* b) { return a->name < b->name; });
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  for (const TensorToWrite* tensor : ordered) {
    header[tensor->name] = {{"dtype", tensor->dtype},
                            {"shape", tensor->shape},
                            {"data_offsets", {offset, offset + tensor->bytes.size()}}};
    offset += tensor->bytes.size();
  }
  std::string header_text = header.dump();
  header_text.append((8 - header_text.size() % 8) % 8, ' ');

  const std::filesystem::path temporary = path.string() + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) return absl::InternalError(absl::StrCat(temporary.string(), ": cannot create"));
    uint64_t header_size = header_text.size();
    char size_bytes[8];
    for (int i = 0; i < 8; ++i) size_bytes[i] = static_cast<char>((header_size >> (8 * i)) & 0xff);
    out.write(size_bytes, 8);
    out.write(header_text.data(), static_cast<std::streamsize>(header_text.size()));
    for (const TensorToWrite* tensor : ordered) {
      out.write(reinterpret_cast<const char*>(tensor->bytes.data()),
                static_cast<std::streamsize>(tensor->bytes.size()));
    }
    if (!out.flush())
      return absl::InternalError(absl::StrCat(temporary.string(), ": write failed"));
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    return absl::InternalError(absl::StrCat(path.string(), ": rename: ", error.message()));
  }
  return absl::OkStatus();
}

}  // namespace kvd::engine
