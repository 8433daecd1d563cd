// The architecture of a LLaMA-family checkpoint, read from its Hugging Face config.json (and
// generation_config.json for the end-of-sequence ids).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kvd::engine {

// Llama 3 style frequency scaling of RoPE ("rope_type": "llama3").
struct Llama3RopeScaling {
  float factor = 8.0f;
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  int32_t original_max_position_embeddings = 8192;
};

struct ModelConfig {
  std::string architecture;  // LlamaForCausalLM, MistralForCausalLM or Qwen2ForCausalLM
  int32_t vocab_size = 0;
  int32_t hidden_size = 0;
  int32_t intermediate_size = 0;
  int32_t num_layers = 0;
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;  // hidden_size / num_heads unless config.json sets it
  int32_t max_position_embeddings = 0;
  float rms_norm_eps = 1e-6f;
  float rope_theta = 10000.0f;
  bool has_llama3_rope_scaling = false;
  Llama3RopeScaling llama3_rope_scaling;
  bool attention_bias = false;  // q/k/v projections carry biases (Qwen2)
  bool tie_word_embeddings = false;
  int32_t bos_token_id = -1;  // -1: none
  std::vector<int32_t> eos_token_ids;

  int32_t group_size() const { return num_heads / num_kv_heads; }
  [[nodiscard]] absl::Status Validate() const;
};

// Parses config.json text; `source` names the file in error messages.
[[nodiscard]] absl::StatusOr<ModelConfig> ParseModelConfig(std::string_view json,
                                                           const std::string& source);

// Reads DIR/config.json, then DIR/generation_config.json when present (its bos/eos ids win).
[[nodiscard]] absl::StatusOr<ModelConfig> LoadModelConfig(const std::filesystem::path& model_dir);

}  // namespace kvd::engine
