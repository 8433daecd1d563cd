#include "engine/derived_model.h"

#include <charconv>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"
#include "engine/safetensors.h"
#include "engine/safetensors_writer.h"
#include "nlohmann/json.hpp"

namespace kvd::engine {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<nlohmann::json> ReadJson(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path.string()));
  nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path.string(), " is not a JSON object"));
  }
  return json;
}

// The safetensors files of a model directory: the shards of its index, or model.safetensors.
absl::StatusOr<std::vector<fs::path>> WeightFiles(const fs::path& dir) {
  const fs::path index = dir / "model.safetensors.index.json";
  if (!fs::exists(index)) return std::vector<fs::path>{dir / "model.safetensors"};
  absl::StatusOr<nlohmann::json> json = ReadJson(index);
  if (!json.ok()) return json.status();
  const auto map = json->find("weight_map");
  if (map == json->end() || !map->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(index.string(), " has no weight_map"));
  }
  std::set<std::string> shards;
  for (const auto& [name, file] : map->items()) {
    if (!file.is_string() || fs::path(file.get<std::string>()).has_parent_path()) {
      return absl::InvalidArgumentError(
          absl::StrCat(index.string(), ": weight_map[", name, "] is not a file name"));
    }
    shards.insert(file.get<std::string>());
  }
  std::vector<fs::path> files;
  for (const std::string& shard : shards) files.push_back(dir / shard);
  return files;
}

// The layer a tensor belongs to ("model.layers.<i>."), or -1 for the others.
int32_t LayerOf(const std::string& name) {
  constexpr absl::string_view kPrefix = "model.layers.";
  if (!absl::StartsWith(name, kPrefix)) return -1;
  int32_t layer = -1;
  const char* begin = name.data() + kPrefix.size();
  const auto [end, error] = std::from_chars(begin, name.data() + name.size(), layer);
  if (error != std::errc() || end == begin || *end != '.') return -1;
  return layer;
}

// Writes `config`, `tensors` and the tokenizer and generation files of `from` to `to`.
absl::Status WriteModel(const fs::path& from, const fs::path& to, const nlohmann::json& config,
                        const std::vector<TensorToWrite>& tensors) {
  std::error_code error;
  fs::create_directories(to, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot create ", to.string(), ": ", error.message()));
  }
  std::ofstream config_file(to / "config.json");
  config_file << config.dump(2) << "\n";
  if (!config_file.flush()) {
    return absl::InternalError(absl::StrCat("cannot write ", (to / "config.json").string()));
  }
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
    if (!fs::exists(from / name)) continue;
    fs::copy_file(from / name, to / name, fs::copy_options::overwrite_existing, error);
    if (error) {
      return absl::InternalError(absl::StrCat("cannot copy ", name, ": ", error.message()));
    }
  }
  return WriteSafetensors(to / "model.safetensors", tensors);
}

// Every tensor of the model in `dir`, copied, that `keep` keeps.
template <typename Keep>
absl::StatusOr<std::vector<TensorToWrite>> ReadTensors(const fs::path& dir, Keep keep) {
  KVD_ASSIGN_OR_RETURN(std::vector<fs::path> files, WeightFiles(dir));
  std::vector<TensorToWrite> tensors;
  for (const fs::path& file : files) {
    KVD_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> weights, SafetensorsFile::Open(file));
    for (const auto& [name, info] : weights->tensors()) {
      if (!keep(name)) continue;
      const auto* bytes = static_cast<const uint8_t*>(info.data);
      tensors.push_back({.name = name,
                         .dtype = info.dtype,
                         .shape = info.shape,
                         .bytes = std::vector<uint8_t>(bytes, bytes + info.num_bytes)});
    }
  }
  return tensors;
}

// The config.json of `dir` and its integer `key`.
absl::StatusOr<std::pair<nlohmann::json, int64_t>> ConfigWith(const fs::path& dir,
                                                              const char* key) {
  KVD_ASSIGN_OR_RETURN(nlohmann::json config, ReadJson(dir / "config.json"));
  const auto value = config.find(key);
  if (value == config.end() || !value->is_number_integer()) {
    return absl::InvalidArgumentError(absl::StrCat("config.json has no integer ", key));
  }
  const int64_t number = value->get<int64_t>();
  return std::make_pair(std::move(config), number);
}

}  // namespace

absl::Status WriteLayerPrefixModel(const fs::path& from, const fs::path& to, int32_t layers) {
  KVD_ASSIGN_OR_RETURN(auto config, ConfigWith(from, "num_hidden_layers"));
  if (layers < 1 || layers > config.second) {
    return absl::InvalidArgumentError(
        absl::StrCat("layers must be in [1, ", config.second, "], got ", layers));
  }
  config.first["num_hidden_layers"] = layers;
  KVD_ASSIGN_OR_RETURN(
      std::vector<TensorToWrite> tensors,
      ReadTensors(from, [&](const std::string& name) { return LayerOf(name) < layers; }));
  return WriteModel(from, to, config.first, tensors);
}

absl::Status WriteWiderMlpModel(const fs::path& from, const fs::path& to, int32_t factor) {
  if (factor < 1 || factor > 64) {
    return absl::InvalidArgumentError(absl::StrCat("factor must be in [1, 64], got ", factor));
  }
  KVD_ASSIGN_OR_RETURN(auto config, ConfigWith(from, "intermediate_size"));
  const int64_t intermediate = config.second;
  config.first["intermediate_size"] = intermediate * factor;
  KVD_ASSIGN_OR_RETURN(std::vector<TensorToWrite> tensors,
                       ReadTensors(from, [](const std::string&) { return true; }));
  for (TensorToWrite& tensor : tensors) {
    if (absl::StrContains(tensor.name, ".mlp.") && absl::EndsWith(tensor.name, ".bias")) {
      return absl::InvalidArgumentError(
          absl::StrCat(tensor.name, ": an MLP with biases cannot be widened"));
    }
    const bool rows = absl::EndsWith(tensor.name, "mlp.gate_proj.weight") ||
                      absl::EndsWith(tensor.name, "mlp.up_proj.weight");
    const bool columns = absl::EndsWith(tensor.name, "mlp.down_proj.weight");
    if (!rows && !columns) continue;
    const size_t element = tensor.dtype == "F32"                             ? 4
                           : tensor.dtype == "BF16" || tensor.dtype == "F16" ? 2
                                                                             : 0;
    if (element == 0 || tensor.shape.size() != 2 || tensor.shape[rows ? 0 : 1] != intermediate) {
      return absl::InvalidArgumentError(
          absl::StrCat(tensor.name, ": expected a 2-D F32, BF16 or F16 tensor with ", intermediate,
                       (rows ? " rows" : " columns")));
    }
    if (rows) {
      tensor.shape[0] *= factor;
      tensor.bytes.resize(tensor.bytes.size() * factor, 0);  // zero rows after the real ones
      continue;
    }
    const size_t row_bytes = static_cast<size_t>(intermediate) * element;
    std::vector<uint8_t> wide(tensor.bytes.size() * factor, 0);
    for (int64_t r = 0; r < tensor.shape[0]; ++r) {
      std::copy_n(tensor.bytes.begin() + r * row_bytes, row_bytes,
                  wide.begin() + r * row_bytes * factor);
    }
    tensor.shape[1] *= factor;
    tensor.bytes = std::move(wide);
  }
  return WriteModel(from, to, config.first, tensors);
}

}  // namespace kvd::engine
