#include "engine/model_weights.h"

#include "absl/strings/str_cat.h"

namespace kvd::engine {
namespace {

class WeightLoader {
 public:
  WeightLoader(const Checkpoint& checkpoint, kernels::Backend& backend,
               std::optional<kernels::DType> dtype)
      : checkpoint_(checkpoint), backend_(backend), dtype_(dtype) {}

  absl::Status Load(const std::string& name, std::vector<int64_t> shape,
                    kernels::PreparedWeight& out) {
    auto host = checkpoint_.Get(name, shape);
    if (!host.ok()) return host.status();
    auto prepared = backend_.PrepareWeight(*host, dtype_);
    if (!prepared.ok()) {
      return absl::Status(prepared.status().code(),
                          absl::StrCat("tensor '", name, "': ", prepared.status().message()));
    }
    out = *std::move(prepared);
    return absl::OkStatus();
  }

 private:
  const Checkpoint& checkpoint_;
  kernels::Backend& backend_;
  const std::optional<kernels::DType> dtype_;
};

}  // namespace

absl::StatusOr<ModelWeights> LoadModelWeights(const Checkpoint& checkpoint,
                                              const ModelConfig& config, kernels::Backend& backend,
                                              std::optional<kernels::DType> dtype) {
  WeightLoader loader(checkpoint, backend, dtype);
  ModelWeights weights;
  const int64_t hidden = config.hidden_size;
  const int64_t q_width = int64_t{config.num_heads} * config.head_dim;
  const int64_t kv_width = int64_t{config.num_kv_heads} * config.head_dim;
  const int64_t inner = config.intermediate_size;

#define KVD_LOAD(name, shape, field) \
  if (auto status = loader.Load(name, shape, field); !status.ok()) return status

  KVD_LOAD("model.embed_tokens.weight", (std::vector<int64_t>{config.vocab_size, hidden}),
           weights.embed_tokens);
  KVD_LOAD("model.norm.weight", (std::vector<int64_t>{hidden}), weights.final_norm);
  if (!config.tie_word_embeddings || checkpoint.Contains("lm_head.weight")) {
    weights.lm_head_weight.emplace();
    KVD_LOAD("lm_head.weight", (std::vector<int64_t>{config.vocab_size, hidden}),
             *weights.lm_head_weight);
  }
  weights.layers.resize(config.num_layers);
  for (int32_t i = 0; i < config.num_layers; ++i) {
    LayerWeights& layer = weights.layers[i];
    const std::string prefix = absl::StrCat("model.layers.", i, ".");
    KVD_LOAD(prefix + "input_layernorm.weight", (std::vector<int64_t>{hidden}), layer.input_norm);
    KVD_LOAD(prefix + "self_attn.q_proj.weight", (std::vector<int64_t>{q_width, hidden}),
             layer.q_proj);
    KVD_LOAD(prefix + "self_attn.k_proj.weight", (std::vector<int64_t>{kv_width, hidden}),
             layer.k_proj);
    KVD_LOAD(prefix + "self_attn.v_proj.weight", (std::vector<int64_t>{kv_width, hidden}),
             layer.v_proj);
    if (config.attention_bias) {
      layer.q_bias.emplace();
      layer.k_bias.emplace();
      layer.v_bias.emplace();
      KVD_LOAD(prefix + "self_attn.q_proj.bias", (std::vector<int64_t>{q_width}), *layer.q_bias);
      KVD_LOAD(prefix + "self_attn.k_proj.bias", (std::vector<int64_t>{kv_width}), *layer.k_bias);
      KVD_LOAD(prefix + "self_attn.v_proj.bias", (std::vector<int64_t>{kv_width}), *layer.v_bias);
    }
    KVD_LOAD(prefix + "self_attn.o_proj.weight", (std::vector<int64_t>{hidden, q_width}),
             layer.o_proj);
    KVD_LOAD(prefix + "post_attention_layernorm.weight", (std::vector<int64_t>{hidden}),
             layer.post_attention_norm);
    KVD_LOAD(prefix + "mlp.gate_proj.weight", (std::vector<int64_t>{inner, hidden}),
             layer.gate_proj);
    KVD_LOAD(prefix + "mlp.up_proj.weight", (std::vector<int64_t>{inner, hidden}), layer.up_proj);
    KVD_LOAD(prefix + "mlp.down_proj.weight", (std::vector<int64_t>{hidden, inner}),
             layer.down_proj);
  }
#undef KVD_LOAD
  return weights;
}

size_t ModelWeights::StepBytes() const {
  size_t bytes = final_norm.tensor.num_bytes() + lm_head().num_bytes();
  for (const LayerWeights& layer : layers) {
    for (const kernels::PreparedWeight* weight :
         {&layer.input_norm, &layer.q_proj, &layer.k_proj, &layer.v_proj, &layer.o_proj,
          &layer.post_attention_norm, &layer.gate_proj, &layer.up_proj, &layer.down_proj}) {
      bytes += weight->tensor.num_bytes();
    }
    for (const auto* bias : {&layer.q_bias, &layer.k_bias, &layer.v_bias}) {
      if (bias->has_value()) bytes += (*bias)->tensor.num_bytes();
    }
  }
  return bytes;
}

}  // namespace kvd::engine
