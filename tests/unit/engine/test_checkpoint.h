// Writes small random LLaMA checkpoints into temporary directories for engine tests.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "engine/safetensors_writer.h"
#include "kernels/dtype.h"
#include "nlohmann/json.hpp"

namespace kvd::engine::testing {

struct TinyShape {
  int hidden = 32;
  int layers = 2;
  int heads = 4;
  int kv_heads = 2;
  int intermediate = 48;
  int vocab = 64;
};

inline nlohmann::json TinyConfig(const TinyShape& shape) {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"hidden_size", shape.hidden},
          {"intermediate_size", shape.intermediate},
          {"num_hidden_layers", shape.layers},
          {"num_attention_heads", shape.heads},
          {"num_key_value_heads", shape.kv_heads},
          {"vocab_size", shape.vocab},
          {"rms_norm_eps", 1e-5},
          {"max_position_embeddings", 128},
          {"tie_word_embeddings", false},
          {"bos_token_id", 0},
          {"eos_token_id", 1}};
}

inline TensorToWrite RandomF32(const std::string& name, std::vector<int64_t> shape,
                               std::mt19937& random) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  std::normal_distribution<float> normal(0.0f, 0.3f);
  TensorToWrite tensor{name, "F32", std::move(shape), std::vector<uint8_t>(count * 4)};
  for (int64_t i = 0; i < count; ++i) {
    const float value = normal(random);
    std::memcpy(tensor.bytes.data() + 4 * i, &value, 4);
  }
  return tensor;
}

// Every tensor a TinyShape model needs, with random values.
inline std::vector<TensorToWrite> TinyTensors(const TinyShape& shape, uint32_t seed) {
  std::mt19937 random(seed);
  const int64_t head_dim = shape.hidden / shape.heads;
  const int64_t q = shape.heads * head_dim, kv = shape.kv_heads * head_dim, h = shape.hidden;
  std::vector<TensorToWrite> tensors = {
      RandomF32("model.embed_tokens.weight", {shape.vocab, h}, random),
      RandomF32("model.norm.weight", {h}, random),
      RandomF32("lm_head.weight", {shape.vocab, h}, random)};
  for (int layer = 0; layer < shape.layers; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".";
    tensors.push_back(RandomF32(p + "input_layernorm.weight", {h}, random));
    tensors.push_back(RandomF32(p + "post_attention_layernorm.weight", {h}, random));
    tensors.push_back(RandomF32(p + "self_attn.q_proj.weight", {q, h}, random));
    tensors.push_back(RandomF32(p + "self_attn.k_proj.weight", {kv, h}, random));
    tensors.push_back(RandomF32(p + "self_attn.v_proj.weight", {kv, h}, random));
    tensors.push_back(RandomF32(p + "self_attn.o_proj.weight", {h, q}, random));
    tensors.push_back(RandomF32(p + "mlp.gate_proj.weight", {shape.intermediate, h}, random));
    tensors.push_back(RandomF32(p + "mlp.up_proj.weight", {shape.intermediate, h}, random));
    tensors.push_back(RandomF32(p + "mlp.down_proj.weight", {h, shape.intermediate}, random));
  }
  return tensors;
}

// A fresh directory under the test temp dir, removed by the test's end.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("kvd_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
             std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void WriteText(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Writes config.json and model.safetensors for `shape` into `dir`.
inline void WriteTinyModel(const std::filesystem::path& dir, const TinyShape& shape = {},
                           uint32_t seed = 1) {
  WriteText(dir / "config.json", TinyConfig(shape).dump());
  ASSERT_TRUE(WriteSafetensors(dir / "model.safetensors", TinyTensors(shape, seed)).ok());
}

}  // namespace kvd::engine::testing
