#include "engine/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "text/bounded_json.h"

namespace kvd::engine {
namespace {

using Json = nlohmann::json;

// Headers larger than this are refused as corrupt (real checkpoints stay far below).
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

size_t DTypeBytes(const std::string& dtype) {
  static const std::map<std::string, size_t> kSizes = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2},    {"I64", 8},
      {"I32", 4}, {"I16", 2}, {"I8", 1},  {"U8", 1},      {"BOOL", 1},
      {"U16", 2}, {"U32", 4}, {"U64", 8}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
  auto it = kSizes.find(dtype);
  return it == kSizes.end() ? 0 : it->second;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

}  // namespace

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(
    const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(
        absl::StrCat(path.string(), ": cannot open: ", std::strerror(errno)));
  }
  struct stat file_stat {};
  if (::fstat(fd, &file_stat) != 0) {
    const int error = errno;
    ::close(fd);
    return absl::InternalError(absl::StrCat(path.string(), ": fstat: ", std::strerror(error)));
  }
  const size_t size = static_cast<size_t>(file_stat.st_size);
  if (size < 8) {
    ::close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat(path.string(), ": truncated: ", size, " bytes, too short for a header"));
  }
  void* mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_error = errno;
  ::close(fd);
  if (mapping == MAP_FAILED) {
    return absl::InternalError(absl::StrCat(path.string(), ": mmap: ", std::strerror(map_error)));
  }
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile(path, mapping, size));
  if (auto status = file->ParseHeader(); !status.ok()) return status;
  return file;
}

SafetensorsFile::~SafetensorsFile() { ::munmap(mapping_, size_); }

absl::Status SafetensorsFile::ParseHeader() {
  const auto* bytes = static_cast<const unsigned char*>(mapping_);
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | bytes[i];
  const std::string where = path_.string();
  if (header_bytes > kMaxHeaderBytes || header_bytes > size_ - 8) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": bad header: declares ", header_bytes,
                                                   " header bytes but the file has ", size_));
  }
  const std::string_view header_text(reinterpret_cast<const char*>(bytes + 8), header_bytes);
  const absl::StatusOr<Json> parsed_header =
      text::ParseBoundedJson<Json>(header_text, "the header");
  if (!parsed_header.ok() || !parsed_header->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": bad header: not a JSON object"));
  }
  const Json& header = *parsed_header;
  const unsigned char* data_start = bytes + 8 + header_bytes;
  const size_t data_size = size_ - 8 - header_bytes;
  for (const auto& item : header.items()) {
    // Not a structured binding: clang before 16 cannot capture one in the lambda below.
    const std::string& name = item.key();
    const Json& entry = item.value();
    if (name == "__metadata__") continue;
    auto bad = [&](const std::string& what) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": tensor '", name, "': ", what));
    };
    if (!entry.is_object() || !entry.contains("dtype") || !entry["dtype"].is_string() ||
        !entry.contains("shape") || !entry["shape"].is_array() || !entry.contains("data_offsets") ||
        !entry["data_offsets"].is_array() || entry["data_offsets"].size() != 2) {
      return bad("bad header entry (needs dtype, shape and two data_offsets)");
    }
    TensorInfo info;
    info.name = name;
    info.dtype = entry["dtype"].get<std::string>();
    const size_t element_bytes = DTypeBytes(info.dtype);
    if (element_bytes == 0) return bad(absl::StrCat("unknown dtype ", info.dtype));
    uint64_t elements = 1;
    for (const Json& dim : entry["shape"]) {
      if (!dim.is_number_unsigned()) return bad("shape must hold non-negative integers");
      const uint64_t size = dim.get<uint64_t>();
      // A wrapped product would let a huge shape match a small (or empty) extent.
      if (size > static_cast<uint64_t>(INT64_MAX) || (size != 0 && elements > UINT64_MAX / size)) {
        return bad(absl::StrCat("shape ", entry["shape"].dump(), " is too large"));
      }
      info.shape.push_back(static_cast<int64_t>(size));
      elements *= size;
    }
    if (elements > UINT64_MAX / element_bytes) {
      return bad(absl::StrCat("shape ", entry["shape"].dump(), " is too large"));
    }
    const Json& offsets = entry["data_offsets"];
    if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned()) {
      return bad("data_offsets must be non-negative integers");
    }
    const uint64_t begin = offsets[0].get<uint64_t>();
    const uint64_t end = offsets[1].get<uint64_t>();
    if (begin > end || end > data_size) {
      return bad(absl::StrCat("data [", begin, ", ", end, ") lies outside the file's ", data_size,
                              " data bytes (truncated file?)"));
    }
    if (end - begin != elements * element_bytes) {
      return bad(absl::StrCat("holds ", end - begin, " bytes but shape ", ShapeString(info.shape),
                              " of ", info.dtype, " needs ", elements * element_bytes));
    }
    info.data = data_start + begin;
    info.num_bytes = end - begin;
    tensors_.emplace(name, std::move(info));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::Open(
    const std::filesystem::path& model_dir) {
  auto checkpoint = std::make_unique<Checkpoint>();
  checkpoint->model_dir_ = model_dir.string();
  std::vector<std::filesystem::path> shard_paths;
  const std::filesystem::path single = model_dir / "model.safetensors";
  const std::filesystem::path index_path = model_dir / "model.safetensors.index.json";
  if (std::filesystem::exists(single)) {
    shard_paths.push_back(single);
  } else if (std::filesystem::exists(index_path)) {
    std::ifstream in(index_path);
    std::ostringstream text;
    text << in.rdbuf();
    const absl::StatusOr<Json> parsed_index = text::ParseBoundedJson<Json>(text.str(), "the index");
    const Json index = parsed_index.ok() ? *parsed_index : Json();
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(index_path.string(), ": not a safetensors index (no \"weight_map\")"));
    }
    std::set<std::string> shards;
    for (const auto& [tensor, shard] : index["weight_map"].items()) {
      if (!shard.is_string() || shard.get<std::string>().find('/') != std::string::npos) {
        return absl::InvalidArgumentError(absl::StrCat(
            index_path.string(), ": weight_map entry for '", tensor, "' is not a file name"));
      }
      shards.insert(shard.get<std::string>());
    }
    for (const std::string& shard : shards) shard_paths.push_back(model_dir / shard);
  } else {
    return absl::NotFoundError(
        absl::StrCat(model_dir.string(), ": no model.safetensors or model.safetensors.index.json"));
  }
  for (const auto& path : shard_paths) {
    auto file = SafetensorsFile::Open(path);
    if (!file.ok()) return file.status();
    for (const auto& [name, info] : (*file)->tensors()) {
      if (checkpoint->index_.contains(name)) {
        return absl::InvalidArgumentError(
            absl::StrCat(path.string(), ": tensor '", name, "' also appears in ",
                         checkpoint->file_of_[name]->path().string()));
      }
      checkpoint->index_[name] = &info;
      checkpoint->file_of_[name] = file->get();
    }
    checkpoint->files_.push_back(*std::move(file));
  }
  return checkpoint;
}

std::string Checkpoint::DescribeLocation(const std::string& name) const {
  auto it = file_of_.find(name);
  return it == file_of_.end() ? std::string("checkpoint") : it->second->path().string();
}

absl::StatusOr<kernels::Tensor> Checkpoint::Get(const std::string& name,
                                                const std::vector<int64_t>& shape) const {
  auto it = index_.find(name);
  if (it == index_.end()) {
    return absl::NotFoundError(
        absl::StrCat(model_dir_, ": the checkpoint has no tensor '", name, "'"));
  }
  const TensorInfo& info = *it->second;
  const std::string where = absl::StrCat(DescribeLocation(name), ": tensor '", name, "'");
  if (info.shape != shape) {
    return absl::InvalidArgumentError(absl::StrCat(where, " has shape ", ShapeString(info.shape),
                                                   ", expected ", ShapeString(shape)));
  }
  kernels::DType dtype;
  if (info.dtype == "F32") {
    dtype = kernels::DType::kF32;
  } else if (info.dtype == "BF16") {
    dtype = kernels::DType::kBF16;
  } else if (info.dtype == "F16") {
    dtype = kernels::DType::kF16;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " has dtype ", info.dtype, "; expected F32, BF16 or F16"));
  }
  const int64_t cols = shape.empty() ? 1 : shape.back();
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
  return kernels::Tensor{const_cast<void*>(info.data), dtype, rows, cols};
}

}  // namespace kvd::engine
