// KVzip head profiles: the per-head maxima of a scored cache, their mean over samples, and the
// file format: canonical bytes, a digest that follows every field, and a decoder that refuses
// whatever is not a profile.
#include "cache_store/kvzip/head_profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "nlohmann/json.hpp"

namespace kvd::cache_store {
namespace {

using ::testing::HasSubstr;

HeadProfile SmallProfile() {
  return HeadProfile{.model_digest = "ab12",
                     .tokenizer_digest = "cd34",
                     .num_layers = 2,
                     .num_kv_heads = 2,
                     .samples = 3,
                     .sample_tokens = 900,
                     .importance = {0.25f, 0.1f + 0.2f, 1.0f / 3.0f, 0.0f}};
}

TEST(MaxScorePerHead, TakesEachHeadsHighestDocumentScoreSkippingThePrefix) {
  constexpr float kPrefix = std::numeric_limits<float>::infinity();
  DocumentPayload payload;
  payload.heads.resize(2);
  payload.heads[0].scores = {kPrefix, 0.2f, 0.7f, 0.1f};
  payload.heads[1].scores = {kPrefix, 0.05f, 0.0f, 0.3f};
  EXPECT_EQ(MaxScorePerHead(payload), (std::vector<float>{0.7f, 0.3f}));
}

TEST(AverageHeadMaxima, IsTheMeanPerHeadOverTheSamples) {
  auto profile = AverageHeadMaxima("d", "t", 1, 2, {{0.2f, 0.9f}, {0.4f, 0.1f}}, 40);
  ASSERT_TRUE(profile.ok()) << profile.status();
  EXPECT_FLOAT_EQ(profile->importance[0], 0.3f);
  EXPECT_FLOAT_EQ(profile->importance[1], 0.5f);
  EXPECT_EQ(profile->samples, 2);
  EXPECT_EQ(profile->sample_tokens, 40);
  EXPECT_EQ(profile->tokenizer_digest, "t");
  EXPECT_FALSE(AverageHeadMaxima("d", "t", 1, 2, {}, 0).ok());
  EXPECT_THAT(AverageHeadMaxima("d", "t", 1, 2, {{0.2f, 0.9f}, {0.4f}}, 40).status().message(),
              HasSubstr("1 heads, not 2"));
}

TEST(HeadProfileCodec, RoundTripsExactlyAndEncodesCanonically) {
  const HeadProfile profile = SmallProfile();
  const std::string encoded = EncodeHeadProfile(profile);
  auto decoded = DecodeHeadProfile(encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, profile) << "every float reads back bit for bit";
  EXPECT_EQ(EncodeHeadProfile(*decoded), encoded);
  EXPECT_EQ(decoded->Digest(), profile.Digest());
}

TEST(HeadProfileCodec, TheDigestFollowsEveryField) {
  const std::string digest = SmallProfile().Digest();
  HeadProfile other = SmallProfile();
  other.importance[2] = std::nextafter(other.importance[2], 1.0f);
  EXPECT_NE(other.Digest(), digest);
  other = SmallProfile();
  other.model_digest = "cd34";
  EXPECT_NE(other.Digest(), digest);
  other = SmallProfile();
  other.tokenizer_digest = "ef56";
  EXPECT_NE(other.Digest(), digest);
  other = SmallProfile();
  other.samples = 4;
  EXPECT_NE(other.Digest(), digest);
}

TEST(HeadProfileCodec, RefusesWhatIsNotAProfile) {
  const nlohmann::json good = nlohmann::json::parse(EncodeHeadProfile(SmallProfile()));
  const auto with = [&](const char* key, const nlohmann::json& value) {
    nlohmann::json changed = good;
    changed[key] = value;
    return DecodeHeadProfile(changed.dump()).status();
  };
  for (const absl::Status& status : {
           DecodeHeadProfile("").status(),
           DecodeHeadProfile("[1, 2]").status(),
           DecodeHeadProfile("{\"format\": \"kvd-kvzip-head-profile/1\"").status(),
           with("format", "kvd-kvzip-head-profile/2"),
           with("model_digest", 7),
           with("tokenizer_digest", nullptr),
           with("comment", "an unknown member"),
           with("num_layers", 2.5),
           with("num_layers", 0),
           with("num_kv_heads", int64_t{1} << 40),
           with("num_kv_heads", 1 << 20),
           with("samples", 0),
           with("sample_tokens", "many"),
           with("importance", nlohmann::json::array({0.1, 0.2, 0.3})),
           with("importance", nlohmann::json::array({0.1, 0.2, 0.3, -0.5})),
           with("importance", nlohmann::json::array({0.1, 0.2, 0.3, 1e300})),
           with("importance", nlohmann::json::array({0.1, 0.2, 0.3, 1.5})),
           with("importance", nlohmann::json::array({0.1, 0.2, 0.3, "x"})),
           with("importance", 0.5),
       }) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(status.message(), HasSubstr("KVzip head profile"));
  }
}

}  // namespace
}  // namespace kvd::cache_store
