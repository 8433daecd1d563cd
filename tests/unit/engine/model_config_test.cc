#include "engine/model_config.h"

#include <gtest/gtest.h>

#include "engine/rope.h"

namespace kvd::engine {
namespace {

constexpr char kLlama[] = R"({
  "architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
  "vocab_size": 100, "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "bos_token_id": 1,
  "eos_token_id": [2, 3], "tie_word_embeddings": true, "max_position_embeddings": 256,
  "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                   "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})";

TEST(ModelConfigTest, ParsesLlamaConfig) {
  auto config = ParseModelConfig(kLlama, "config.json");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->head_dim, 16);
  EXPECT_EQ(config->group_size(), 2);
  EXPECT_EQ(config->eos_token_ids, (std::vector<int32_t>{2, 3}));
  EXPECT_TRUE(config->tie_word_embeddings);
  EXPECT_TRUE(config->has_llama3_rope_scaling);
  EXPECT_FALSE(config->attention_bias);
  EXPECT_FLOAT_EQ(config->llama3_rope_scaling.factor, 32.0f);
}

TEST(ModelConfigTest, Qwen2HasAttentionBias) {
  auto config = ParseModelConfig(R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 64,
      "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 4,
      "num_key_value_heads": 1, "vocab_size": 50, "eos_token_id": 7})",
                                 "config.json");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->attention_bias);
  EXPECT_EQ(config->eos_token_ids, (std::vector<int32_t>{7}));
}

TEST(ModelConfigTest, RejectsUnsupportedAndInvalidConfigs) {
  struct Case {
    const char* json;
    absl::StatusCode code;
    const char* message_part;
  } cases[] = {
      {"not json", absl::StatusCode::kInvalidArgument, "not valid JSON"},
      {R"({"architectures": ["GPT2LMHeadModel"]})", absl::StatusCode::kUnimplemented,
       "GPT2LMHeadModel"},
      {R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64})",
       absl::StatusCode::kInvalidArgument, "missing \"vocab_size\""},
      {R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 8,
          "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 3,
          "vocab_size": 10})",
       absl::StatusCode::kInvalidArgument, "multiple of num_key_value_heads"},
      {R"({"architectures": ["LlamaForCausalLM"], "hidden_size": "64", "intermediate_size": 8,
          "num_hidden_layers": 1, "num_attention_heads": 4, "vocab_size": 10})",
       absl::StatusCode::kInvalidArgument, "\"hidden_size\" must be an integer"},
      {R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 8,
          "num_hidden_layers": 1, "num_attention_heads": 4, "vocab_size": 10,
          "rope_scaling": {"rope_type": "yarn", "factor": 4.0}})",
       absl::StatusCode::kUnimplemented, "yarn"},
  };
  for (const Case& c : cases) {
    auto config = ParseModelConfig(c.json, "dir/config.json");
    ASSERT_FALSE(config.ok()) << c.json;
    EXPECT_EQ(config.status().code(), c.code) << config.status();
    EXPECT_NE(config.status().message().find("dir/config.json"), std::string_view::npos);
    EXPECT_NE(config.status().message().find(c.message_part), std::string_view::npos)
        << config.status();
  }
}

TEST(RopeTest, PlainFrequenciesFollowTheta) {
  ModelConfig config;
  config.head_dim = 8;
  config.rope_theta = 10000.0f;
  const auto inv_freq = RopeInverseFrequencies(config);
  ASSERT_EQ(inv_freq.size(), 4u);
  EXPECT_FLOAT_EQ(inv_freq[0], 1.0f);
  EXPECT_FLOAT_EQ(inv_freq[1], 0.1f);
  EXPECT_FLOAT_EQ(inv_freq[3], 0.001f);
}

TEST(RopeTest, Llama3ScalingKeepsHighAndDividesLowFrequencies) {
  auto config = ParseModelConfig(kLlama, "config.json");
  ASSERT_TRUE(config.ok());
  config->head_dim = 128;
  ModelConfig unscaled = *config;
  unscaled.has_llama3_rope_scaling = false;
  const auto scaled = RopeInverseFrequencies(*config);
  const auto plain = RopeInverseFrequencies(unscaled);
  EXPECT_FLOAT_EQ(scaled[0], plain[0]);                  // wavelength 2π, far below 8192/4
  EXPECT_FLOAT_EQ(scaled.back(), plain.back() / 32.0f);  // longest wavelengths: divided by factor
  for (size_t i = 0; i < scaled.size(); ++i) {
    EXPECT_LE(scaled[i], plain[i] * 1.000001f);
    EXPECT_GE(scaled[i], plain[i] / 32.0f * 0.999999f);
  }
}

}  // namespace
}  // namespace kvd::engine
