// make_random_model: writes a Hugging Face model directory with a real architecture's shape and
// seeded random weights (Llama 3.2 1B by default), for benchmarks at realistic sizes.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "engine/model_config.h"
#include "engine/safetensors_writer.h"
#include "kernels/dtype.h"
#include "nlohmann/json.hpp"

namespace {

struct Shape {
  int hidden = 2048;
  int layers = 16;
  int heads = 32;
  int kv_heads = 8;
  int head_dim = 64;
  int intermediate = 8192;
  int vocab = 128256;
  int context = 8192;
};

nlohmann::json ConfigJson(const Shape& shape) {
  return {
      {"architectures", {"LlamaForCausalLM"}},
      {"model_type", "llama"},
      {"hidden_size", shape.hidden},
      {"num_hidden_layers", shape.layers},
      {"num_attention_heads", shape.heads},
      {"num_key_value_heads", shape.kv_heads},
      {"head_dim", shape.head_dim},
      {"intermediate_size", shape.intermediate},
      {"vocab_size", shape.vocab},
      {"max_position_embeddings", shape.context},
      {"rms_norm_eps", 1e-5},
      {"rope_theta", 500000.0},
      {"rope_scaling",
       {{"rope_type", "llama3"},
        {"factor", 32.0},
        {"low_freq_factor", 1.0},
        {"high_freq_factor", 4.0},
        {"original_max_position_embeddings", 8192}}},
      {"hidden_act", "silu"},
      {"tie_word_embeddings", true},
      {"bos_token_id", 0},
      {"eos_token_id", 1},
      {"torch_dtype", "bfloat16"},
  };
}

// A tensor of N(0, std²) values (or all ones for norms), in bf16 or f32.
kvd::engine::TensorToWrite RandomTensor(const std::string& name, std::vector<int64_t> shape,
                                        float stddev, bool bf16, std::mt19937_64& random) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  kvd::engine::TensorToWrite tensor{name, bf16 ? "BF16" : "F32", std::move(shape), {}};
  tensor.bytes.resize(static_cast<size_t>(count) * (bf16 ? 2 : 4));
  std::normal_distribution<float> normal(0.0f, stddev);
  for (int64_t i = 0; i < count; ++i) {
    const float value = stddev == 0.0f ? 1.0f : normal(random);
    if (bf16) {
      const uint16_t bits = kvd::kernels::FloatToBF16(value);
      std::memcpy(tensor.bytes.data() + 2 * i, &bits, 2);
    } else {
      std::memcpy(tensor.bytes.data() + 4 * i, &value, 4);
    }
  }
  return tensor;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(
      "Write a randomly initialised LLaMA-architecture checkpoint (default: the shape of "
      "Llama 3.2 1B) for benchmarks");
  Shape shape;
  std::string out_dir;
  uint64_t seed = 1;
  std::string dtype = "bf16";
  app.add_option("--out", out_dir, "Output model directory")->required();
  app.add_option("--hidden", shape.hidden)->capture_default_str();
  app.add_option("--layers", shape.layers)->capture_default_str();
  app.add_option("--heads", shape.heads)->capture_default_str();
  app.add_option("--kv-heads", shape.kv_heads)->capture_default_str();
  app.add_option("--head-dim", shape.head_dim)->capture_default_str();
  app.add_option("--intermediate", shape.intermediate)->capture_default_str();
  app.add_option("--vocab", shape.vocab)->capture_default_str();
  app.add_option("--context", shape.context)->capture_default_str();
  app.add_option("--dtype", dtype, "bf16 or f32")
      ->check(CLI::IsMember({"bf16", "f32"}))
      ->capture_default_str();
  app.add_option("--seed", seed)->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const std::filesystem::path out(out_dir);
  std::filesystem::create_directories(out);
  const nlohmann::json config = ConfigJson(shape);
  auto parsed = kvd::engine::ParseModelConfig(config.dump(), "generated config");
  if (!parsed.ok()) {
    std::fprintf(stderr, "make_random_model: %s\n", std::string(parsed.status().message()).c_str());
    return 2;
  }
  std::ofstream(out / "config.json") << config.dump(2) << "\n";

  std::mt19937_64 random(seed);
  const bool bf16 = dtype == "bf16";
  const float init = 0.02f;  // the initializer_range of Llama configs
  const int64_t hidden = shape.hidden, q_width = int64_t{shape.heads} * shape.head_dim,
                kv_width = int64_t{shape.kv_heads} * shape.head_dim;
  std::vector<kvd::engine::TensorToWrite> tensors;
  tensors.push_back(
      RandomTensor("model.embed_tokens.weight", {shape.vocab, hidden}, init, bf16, random));
  tensors.push_back(RandomTensor("model.norm.weight", {hidden}, 0.0f, bf16, random));
  for (int layer = 0; layer < shape.layers; ++layer) {
    const std::string prefix = "model.layers." + std::to_string(layer) + ".";
    tensors.push_back(
        RandomTensor(prefix + "input_layernorm.weight", {hidden}, 0.0f, bf16, random));
    tensors.push_back(
        RandomTensor(prefix + "post_attention_layernorm.weight", {hidden}, 0.0f, bf16, random));
    tensors.push_back(
        RandomTensor(prefix + "self_attn.q_proj.weight", {q_width, hidden}, init, bf16, random));
    tensors.push_back(
        RandomTensor(prefix + "self_attn.k_proj.weight", {kv_width, hidden}, init, bf16, random));
    tensors.push_back(
        RandomTensor(prefix + "self_attn.v_proj.weight", {kv_width, hidden}, init, bf16, random));
    tensors.push_back(
        RandomTensor(prefix + "self_attn.o_proj.weight", {hidden, q_width}, init, bf16, random));
    tensors.push_back(RandomTensor(prefix + "mlp.gate_proj.weight", {shape.intermediate, hidden},
                                   init, bf16, random));
    tensors.push_back(RandomTensor(prefix + "mlp.up_proj.weight", {shape.intermediate, hidden},
                                   init, bf16, random));
    tensors.push_back(RandomTensor(prefix + "mlp.down_proj.weight", {hidden, shape.intermediate},
                                   init, bf16, random));
  }
  if (auto status = kvd::engine::WriteSafetensors(out / "model.safetensors", tensors);
      !status.ok()) {
    std::fprintf(stderr, "make_random_model: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  std::printf("wrote %s\n", out.c_str());
  return 0;
}
