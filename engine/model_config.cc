#include "engine/model_config.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "text/bounded_json.h"

namespace kvd::engine {
namespace {

using Json = nlohmann::json;

absl::StatusOr<std::string> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path.string(), ": cannot open"));
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

absl::StatusOr<Json> ParseJsonObject(std::string_view text, const std::string& source) {
  absl::StatusOr<Json> json = text::ParseBoundedJson<Json>(text, source);
  if (!json.ok()) return json.status();
  if (!json->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": expected a JSON object"));
  }
  return json;
}

// Reads an integer field; absent → `fallback` unless `required`.
absl::Status ReadInt(const Json& json, const std::string& source, const char* key, bool required,
                     int32_t& out) {
  auto it = json.find(key);
  if (it == json.end() || it->is_null()) {
    if (required)
      return absl::InvalidArgumentError(absl::StrCat(source, ": missing \"", key, "\""));
    return absl::OkStatus();
  }
  if (!it->is_number_integer()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": \"", key, "\" must be an integer"));
  }
  const int64_t value = it->get<int64_t>();
  if (value < INT32_MIN || value > INT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": \"", key, "\" is out of range"));
  }
  out = static_cast<int32_t>(value);
  return absl::OkStatus();
}

absl::Status ReadFloat(const Json& json, const std::string& source, const char* key, float& out) {
  auto it = json.find(key);
  if (it == json.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_number()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": \"", key, "\" must be a number"));
  }
  const double value = it->get<double>();
  if (!(std::abs(value) <= std::numeric_limits<float>::max())) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": \"", key, "\" is out of range"));
  }
  out = static_cast<float>(value);
  return absl::OkStatus();
}

// eos_token_id may be one integer or a list of them.
absl::Status ReadTokenIds(const Json& json, const std::string& source, const char* key,
                          std::vector<int32_t>& out) {
  auto it = json.find(key);
  if (it == json.end() || it->is_null()) return absl::OkStatus();
  std::vector<int32_t> ids;
  const Json values = it->is_array() ? *it : Json::array({*it});
  for (const Json& value : values) {
    if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
        value.get<int64_t>() > INT32_MAX) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": \"", key, "\" must be a token id or a list of them"));
    }
    ids.push_back(value.get<int32_t>());
  }
  out = std::move(ids);
  return absl::OkStatus();
}

absl::Status ReadRopeScaling(const Json& json, const std::string& source, ModelConfig& config) {
  auto it = json.find("rope_scaling");
  if (it == json.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": \"rope_scaling\" must be an object"));
  }
  std::string type;
  for (const char* key : {"rope_type", "type"}) {
    if (it->contains(key) && (*it)[key].is_string()) type = (*it)[key].get<std::string>();
  }
  if (type == "default") return absl::OkStatus();
  if (type != "llama3") {
    return absl::UnimplementedError(absl::StrCat(source, ": rope_scaling type \"", type,
                                                 "\" is not supported (supported: llama3)"));
  }
  Llama3RopeScaling& scaling = config.llama3_rope_scaling;
  if (auto status = ReadFloat(*it, source, "factor", scaling.factor); !status.ok()) return status;
  if (auto status = ReadFloat(*it, source, "low_freq_factor", scaling.low_freq_factor);
      !status.ok()) {
    return status;
  }
  if (auto status = ReadFloat(*it, source, "high_freq_factor", scaling.high_freq_factor);
      !status.ok()) {
    return status;
  }
  if (auto status = ReadInt(*it, source, "original_max_position_embeddings", false,
                            scaling.original_max_position_embeddings);
      !status.ok()) {
    return status;
  }
  config.has_llama3_rope_scaling = true;
  return absl::OkStatus();
}

constexpr const char* kSupportedArchitectures[] = {"LlamaForCausalLM", "MistralForCausalLM",
                                                   "Qwen2ForCausalLM"};

}  // namespace

absl::Status ModelConfig::Validate() const {
  auto invalid = [](const char* what) { return absl::InvalidArgumentError(what); };
  if (vocab_size <= 0) return invalid("vocab_size must be positive");
  if (hidden_size <= 0 || intermediate_size <= 0 || num_layers <= 0) {
    return invalid("hidden_size, intermediate_size and num_hidden_layers must be positive");
  }
  if (num_heads <= 0 || num_kv_heads <= 0 || num_heads % num_kv_heads != 0) {
    return invalid("num_attention_heads must be a positive multiple of num_key_value_heads");
  }
  if (head_dim <= 0 || head_dim % 2 != 0) return invalid("head_dim must be positive and even");
  if (rms_norm_eps <= 0.0f) return invalid("rms_norm_eps must be positive");
  if (rope_theta <= 0.0f) return invalid("rope_theta must be positive");
  if (max_position_embeddings <= 0) return invalid("max_position_embeddings must be positive");
  if (bos_token_id < -1 || bos_token_id >= vocab_size) {
    return invalid("bos_token_id is outside the vocabulary");
  }
  for (int32_t id : eos_token_ids) {
    if (id < 0 || id >= vocab_size) return invalid("eos_token_id is outside the vocabulary");
  }
  return absl::OkStatus();
}

absl::StatusOr<ModelConfig> ParseModelConfig(std::string_view text, const std::string& source) {
  auto parsed = ParseJsonObject(text, source);
  if (!parsed.ok()) return parsed.status();
  const Json& json = *parsed;
  ModelConfig config;
  auto architectures = json.find("architectures");
  if (architectures == json.end() || !architectures->is_array() || architectures->empty() ||
      !(*architectures)[0].is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": missing \"architectures\""));
  }
  config.architecture = (*architectures)[0].get<std::string>();
  if (std::find(std::begin(kSupportedArchitectures), std::end(kSupportedArchitectures),
                config.architecture) == std::end(kSupportedArchitectures)) {
    return absl::UnimplementedError(absl::StrCat(
        source, ": architecture \"", config.architecture,
        "\" is not supported (supported: ", absl::StrJoin(kSupportedArchitectures, ", "), ")"));
  }
  config.attention_bias = config.architecture == "Qwen2ForCausalLM";
  if (json.contains("attention_bias") && json["attention_bias"].is_boolean()) {
    config.attention_bias = json["attention_bias"].get<bool>();
  }
  const struct {
    const char* key;
    int32_t* field;
    bool required;
  } int_fields[] = {
      {"vocab_size", &config.vocab_size, true},
      {"hidden_size", &config.hidden_size, true},
      {"intermediate_size", &config.intermediate_size, true},
      {"num_hidden_layers", &config.num_layers, true},
      {"num_attention_heads", &config.num_heads, true},
      {"num_key_value_heads", &config.num_kv_heads, false},
      {"head_dim", &config.head_dim, false},
      {"max_position_embeddings", &config.max_position_embeddings, false},
      {"bos_token_id", &config.bos_token_id, false},
  };
  for (const auto& field : int_fields) {
    if (auto status = ReadInt(json, source, field.key, field.required, *field.field);
        !status.ok()) {
      return status;
    }
  }
  if (config.num_kv_heads == 0) config.num_kv_heads = config.num_heads;
  if (config.head_dim == 0 && config.num_heads > 0) {
    config.head_dim = config.hidden_size / config.num_heads;
  }
  if (config.max_position_embeddings == 0) config.max_position_embeddings = 2048;
  if (auto status = ReadFloat(json, source, "rms_norm_eps", config.rms_norm_eps); !status.ok()) {
    return status;
  }
  if (auto status = ReadFloat(json, source, "rope_theta", config.rope_theta); !status.ok()) {
    return status;
  }
  if (auto status = ReadRopeScaling(json, source, config); !status.ok()) return status;
  if (auto status = ReadTokenIds(json, source, "eos_token_id", config.eos_token_ids);
      !status.ok()) {
    return status;
  }
  if (json.contains("tie_word_embeddings") && json["tie_word_embeddings"].is_boolean()) {
    config.tie_word_embeddings = json["tie_word_embeddings"].get<bool>();
  }
  if (json.contains("hidden_act") && json["hidden_act"] != "silu") {
    return absl::UnimplementedError(absl::StrCat(source, ": hidden_act ", json["hidden_act"].dump(),
                                                 " is not supported (supported: silu)"));
  }
  if (auto status = config.Validate(); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", status.message()));
  }
  return config;
}

absl::StatusOr<ModelConfig> LoadModelConfig(const std::filesystem::path& model_dir) {
  const std::filesystem::path config_path = model_dir / "config.json";
  auto text = ReadFile(config_path);
  if (!text.ok()) return text.status();
  auto config = ParseModelConfig(*text, config_path.string());
  if (!config.ok()) return config.status();

  const std::filesystem::path generation_path = model_dir / "generation_config.json";
  if (std::filesystem::exists(generation_path)) {
    auto generation_text = ReadFile(generation_path);
    if (!generation_text.ok()) return generation_text.status();
    auto generation = ParseJsonObject(*generation_text, generation_path.string());
    if (!generation.ok()) return generation.status();
    if (auto status = ReadInt(*generation, generation_path.string(), "bos_token_id", false,
                              config->bos_token_id);
        !status.ok()) {
      return status;
    }
    if (auto status = ReadTokenIds(*generation, generation_path.string(), "eos_token_id",
                                   config->eos_token_ids);
        !status.ok()) {
      return status;
    }
    if (auto status = config->Validate(); !status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(generation_path.string(), ": ", status.message()));
    }
  }
  return config;
}

}  // namespace kvd::engine
