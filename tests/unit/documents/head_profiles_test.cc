// KVzip head profiles measured on the bundled model: the same samples give the same profile,
// bit for bit, and only a profile of the served model loads.
#include "documents/head_profiles.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "engine/model.h"
#include "kernels/backend.h"
#include "tests/support/source_dir.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace kvd::documents {
namespace {

using ::testing::HasSubstr;

const std::filesystem::path kModelDir =
    std::filesystem::path(kvd::test_support::SourceDir()) / "models/kvd-tiny";

class HeadProfilesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    backend_ = kernels::CreateBackend("cpu", {.num_threads = 2})->release();
    model_ = engine::Model::Load(kModelDir, *backend_)->release();
    tokenizer_ = text::Tokenizer::FromFile(kModelDir / "tokenizer.json")->release();
    chat_template_ = text::ChatTemplate::FromTokenizerConfig(kModelDir)->release();
  }
  static void TearDownTestSuite() {
    delete chat_template_;
    delete tokenizer_;
    delete model_;
    delete backend_;
  }
  void SetUp() override {
    prompts_ = *cache_store::PrepareDocumentPrompts(Pipeline());
    fingerprint_ = *engine::FingerprintModel(kModelDir, framing_.IdentityParts());
  }
  cache_store::DocumentPipeline Pipeline() const { return {&framing_, chat_template_, tokenizer_}; }
  absl::StatusOr<cache_store::HeadProfile> Profile(const std::vector<std::string>& texts) {
    return ProfileHeads(*model_, Pipeline(), prompts_, fingerprint_, texts);
  }
  std::string WriteFile(const std::string& name, const std::string& bytes) {
    const std::string path = ::testing::TempDir() + "/" + name + "." + std::to_string(getpid());
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  static inline kernels::Backend* backend_ = nullptr;
  static inline engine::Model* model_ = nullptr;
  static inline text::Tokenizer* tokenizer_ = nullptr;
  static inline text::ChatTemplate* chat_template_ = nullptr;
  const cache_store::DocumentFraming framing_{};  // chat, the user turn
  cache_store::DocumentPrompts prompts_;
  engine::CacheFingerprint fingerprint_;
};

const std::vector<std::string> kSamples = {
    "vig: QXTV\nlom: BRAE\nthe river runs by the old mill and the miller sings.\ntor: KEPW",
    "zun: MOLA\nthe tide comes in twice a day.\nfep: RIXO\nwab: TUNE\nhal: GOSP"};

TEST_F(HeadProfilesTest, TheSameSamplesGiveTheSameProfileBitForBit) {
  auto first = Profile(kSamples);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = Profile(kSamples);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(*first, *second);
  EXPECT_EQ(cache_store::EncodeHeadProfile(*first), cache_store::EncodeHeadProfile(*second));
  EXPECT_EQ(first->model_digest, fingerprint_.model_digest);
  EXPECT_EQ(first->tokenizer_digest, fingerprint_.tokenizer_digest);
  EXPECT_EQ(first->samples, 2);
  const engine::ModelConfig& config = model_->config();
  ASSERT_EQ(first->importance.size(), static_cast<size_t>(config.num_layers) * config.num_kv_heads);
  for (float importance : first->importance) {
    EXPECT_GT(importance, 0.0f);  // each head attends to some entry
    EXPECT_LE(importance, 1.0f);  // a probability's maximum
  }
  // Another sample set measures something else.
  auto other = Profile({kSamples[0]});
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(other->importance, first->importance);
}

TEST_F(HeadProfilesTest, ASampleThatIsNotADocumentIsNamed) {
  auto profile = Profile({kSamples[0], ""});
  EXPECT_EQ(profile.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(profile.status().message(), HasSubstr("sample 2"));
  EXPECT_EQ(Profile({}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(HeadProfilesTest, LoadsOnlyAProfileOfTheServedModel) {
  const engine::ModelConfig& config = model_->config();
  auto none = LoadHeadProfile("", fingerprint_, config);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value());

  const auto profile = *cache_store::AverageHeadMaxima(
      fingerprint_.model_digest, fingerprint_.tokenizer_digest, config.num_layers,
      config.num_kv_heads,
      {std::vector<float>(static_cast<size_t>(config.num_layers) * config.num_kv_heads, 0.5f)}, 10);
  auto loaded = LoadHeadProfile(WriteFile("profile.json", cache_store::EncodeHeadProfile(profile)),
                                fingerprint_, config);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(**loaded, profile);

  cache_store::HeadProfile foreign = profile;
  foreign.model_digest = std::string(64, '0');
  const std::string foreign_path =
      WriteFile("foreign.json", cache_store::EncodeHeadProfile(foreign));
  EXPECT_THAT(LoadHeadProfile(foreign_path, fingerprint_, config).status().message(),
              HasSubstr("made for another model"));
  cache_store::HeadProfile other_prompts = profile;
  other_prompts.tokenizer_digest = std::string(64, '1');
  EXPECT_THAT(
      LoadHeadProfile(WriteFile("prompts.json", cache_store::EncodeHeadProfile(other_prompts)),
                      fingerprint_, config)
          .status()
          .message(),
      HasSubstr("another tokenizer, chat template or documents framing"));
  engine::ModelConfig other_shape = config;
  other_shape.num_kv_heads += 1;
  EXPECT_FALSE(LoadHeadProfile(WriteFile("shape.json", cache_store::EncodeHeadProfile(profile)),
                               fingerprint_, other_shape)
                   .ok());
  for (const std::string& path :
       {WriteFile("garbage.json", "{\"format\": 3"), std::string("/nonexistent/profile.json")}) {
    const absl::Status status = LoadHeadProfile(path, fingerprint_, config).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(status.message(), HasSubstr("documents.head_profile"));
  }
}

}  // namespace
}  // namespace kvd::documents
