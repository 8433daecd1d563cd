// The weights of a LLaMA-family model, validated against its config and prepared for a backend.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model_config.h"
#include "engine/safetensors.h"
#include "kernels/backend.h"

namespace kvd::engine {

struct LayerWeights {
  kernels::PreparedWeight input_norm;                             // [hidden]
  kernels::PreparedWeight q_proj;                                 // [heads * head_dim, hidden]
  kernels::PreparedWeight k_proj;                                 // [kv_heads * head_dim, hidden]
  kernels::PreparedWeight v_proj;                                 // [kv_heads * head_dim, hidden]
  std::optional<kernels::PreparedWeight> q_bias, k_bias, v_bias;  // Qwen2
  kernels::PreparedWeight o_proj;                                 // [hidden, heads * head_dim]
  kernels::PreparedWeight post_attention_norm;
  kernels::PreparedWeight gate_proj;  // [intermediate, hidden]
  kernels::PreparedWeight up_proj;    // [intermediate, hidden]
  kernels::PreparedWeight down_proj;  // [hidden, intermediate]
};

struct ModelWeights {
  kernels::PreparedWeight embed_tokens;  // [vocab, hidden]
  std::vector<LayerWeights> layers;
  kernels::PreparedWeight final_norm;
  // The LM head; empty when tied, and then lm_head() is embed_tokens.
  std::optional<kernels::PreparedWeight> lm_head_weight;

  const kernels::Tensor& lm_head() const {
    return lm_head_weight ? lm_head_weight->tensor : embed_tokens.tensor;
  }
  // The bytes a decode step reads in full, as the backend keeps them: every layer's weights,
  // the final norm and the LM head (the embedding table is only gathered from, unless tied).
  size_t StepBytes() const;
};

// Loads every tensor the config calls for, its matrices in `dtype` where given (else the
// backend's choice); errors name the file and the tensor.
[[nodiscard]] absl::StatusOr<ModelWeights> LoadModelWeights(
    const Checkpoint& checkpoint, const ModelConfig& config, kernels::Backend& backend,
    std::optional<kernels::DType> dtype = std::nullopt);

}  // namespace kvd::engine
