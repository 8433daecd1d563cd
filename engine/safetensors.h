// Read-only, memory-mapped access to Hugging Face safetensors checkpoints: one
// model.safetensors file or shards listed in model.safetensors.index.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/tensor.h"

namespace kvd::engine {

struct TensorInfo {
  std::string name;
  std::string dtype;  // as in the file: "F32", "BF16", "F16", "I64", ...
  std::vector<int64_t> shape;
  const void* data = nullptr;  // into the mapping
  size_t num_bytes = 0;
};

// One mapped .safetensors file. Every tensor's extent is validated against the file on open.
class SafetensorsFile {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<SafetensorsFile>> Open(
      const std::filesystem::path& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }

 private:
  SafetensorsFile(std::filesystem::path path, void* mapping, size_t size)
      : path_(std::move(path)), mapping_(mapping), size_(size) {}
  absl::Status ParseHeader();

  std::filesystem::path path_;
  void* mapping_;
  size_t size_;
  std::map<std::string, TensorInfo> tensors_;
};

// All tensors of a model directory, however they are sharded.
class Checkpoint {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Checkpoint>> Open(
      const std::filesystem::path& model_dir);

  bool Contains(const std::string& name) const { return index_.contains(name); }
  // The tensor `name` as a 2-D view (leading dimensions folded into rows), checked to have
  // exactly `shape` and a floating dtype (F32, BF16, F16).
  [[nodiscard]] absl::StatusOr<kernels::Tensor> Get(const std::string& name,
                                                    const std::vector<int64_t>& shape) const;
  std::string DescribeLocation(const std::string& name) const;

 private:
  std::string model_dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorInfo*> index_;
  std::map<std::string, const SafetensorsFile*> file_of_;
};

}  // namespace kvd::engine
