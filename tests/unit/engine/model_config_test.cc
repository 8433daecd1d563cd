#include "engine/model_config.h"

#include <gtest/gtest.h>

#include <string>

#include "engine/rope.h"
#include "test_checkpoint.h"

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

// The smallest valid config with `extra` (`"key": value, ...`) appended.
std::string ConfigWith(const std::string& extra) {
  return R"({"architectures": ["LlamaForCausalLM"], "vocab_size": 10, "hidden_size": 8,
      "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, )" +
         extra + "}";
}

TEST(ModelConfigTest, RefusesTokenIdsOutsideTheVocabulary) {
  // Ids past int32 used to wrap: 2^31 to a negative id, 2^32 + 2 to id 2.
  for (const char* extra : {R"("eos_token_id": 2147483648)", R"("eos_token_id": [4294967298])",
                            R"("bos_token_id": -7)", R"("bos_token_id": -2147483648)"}) {
    auto config = ParseModelConfig(ConfigWith(extra), "config.json");
    ASSERT_FALSE(config.ok()) << extra;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << config.status();
  }
  auto none = ParseModelConfig(ConfigWith(R"("bos_token_id": -1, "eos_token_id": [])"), "c");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->bos_token_id, -1);
}

TEST(ModelConfigTest, GenerationConfigIdsAreCheckedToo) {
  testing::TempDir dir;
  testing::WriteText(dir.path() / "config.json", ConfigWith(R"("eos_token_id": 2)"));
  testing::WriteText(dir.path() / "generation_config.json", R"({"bos_token_id": -3})");
  EXPECT_EQ(LoadModelConfig(dir.path()).status().code(), absl::StatusCode::kInvalidArgument);
  testing::WriteText(dir.path() / "generation_config.json", R"({"eos_token_id": 4294967296})");
  EXPECT_EQ(LoadModelConfig(dir.path()).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ModelConfigTest, RefusesNumbersBeyondFloatRange) {
  // 1e39 used to become +inf: a positive rope_theta or rms_norm_eps that Validate accepted.
  for (const char* extra : {R"("rope_theta": 1e39)", R"("rms_norm_eps": 1e300)",
                            R"("rope_scaling": {"rope_type": "llama3", "factor": 3.5e38})"}) {
    auto config = ParseModelConfig(ConfigWith(extra), "config.json");
    ASSERT_FALSE(config.ok()) << extra;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << config.status();
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
