// The payload byte format: round trips, and refusal of truncated, flipped or inconsistent
// bytes with DataLoss, never a crash or a silently different cache.
#include "cache_store/store/payload_codec.h"

#include <gtest/gtest.h>

#include <limits>

#include "base/sha256.h"
#include "tests/unit/cache_store/test_payload.h"

namespace kvd::cache_store::testing {
namespace {

TEST(PayloadCodecTest, RoundTrips) {
  const DocumentPayload payload = SmallPayload();
  ASSERT_TRUE(payload.Validate().ok()) << payload.Validate();
  absl::StatusOr<std::string> bytes = EncodePayload(payload);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<DocumentPayload> decoded = DecodePayload(*bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, payload);
  EXPECT_EQ(decoded->head(0, 0).kept(), 0);  // an empty head survives
}

TEST(PayloadCodecTest, EncodingIsDeterministic) {
  EXPECT_EQ(*EncodePayload(SmallPayload(7)), *EncodePayload(SmallPayload(7)));
}

TEST(PayloadCodecTest, RefusesToEncodeAnInconsistentPayload) {
  DocumentPayload payload = SmallPayload();
  payload.head(1, 1).scores.pop_back();
  EXPECT_EQ(EncodePayload(payload).status().code(), absl::StatusCode::kInvalidArgument);
  payload = SmallPayload();
  payload.head(1, 0).positions[0] = payload.original_length;
  EXPECT_EQ(EncodePayload(payload).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PayloadCodecTest, EveryFlippedByteIsRefused) {
  const DocumentPayload payload = SmallPayload(3);
  const std::string bytes = *EncodePayload(payload);
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      std::string flipped = bytes;
      flipped[i] = static_cast<char>(flipped[i] ^ mask);
      absl::StatusOr<DocumentPayload> decoded = DecodePayload(flipped);
      if (decoded.ok()) {
        EXPECT_EQ(*decoded, payload) << "byte " << i << " decoded to a different cache";
      } else {
        EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss) << "byte " << i;
      }
    }
  }
}

TEST(PayloadCodecTest, EveryTruncationIsRefused) {
  const std::string bytes = *EncodePayload(SmallPayload(4));
  for (size_t size = 0; size < bytes.size(); ++size) {
    absl::StatusOr<DocumentPayload> decoded = DecodePayload(bytes.substr(0, size));
    ASSERT_FALSE(decoded.ok()) << size;
    EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss) << size;
  }
  EXPECT_EQ(DecodePayload(bytes + "x").status().code(), absl::StatusCode::kDataLoss);
}

// Re-seals a tampered body with a valid checksum: only the structural checks stand between
// these bytes and a wrong cache.
std::string Reseal(std::string bytes) {
  bytes.resize(bytes.size() - 32);
  base::Sha256Digest digest = base::Sha256(bytes);
  bytes.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  return bytes;
}

TEST(PayloadCodecTest, InconsistentContentsUnderAValidChecksumAreRefused) {
  const std::string bytes = *EncodePayload(SmallPayload(5));
  constexpr size_t kBody = 16;
  // Every byte of the geometry and prefix-length fields, set to extreme values.
  for (size_t offset = kBody; offset < kBody + 16; ++offset) {
    for (char value : {'\0', '\x7f', '\xff'}) {
      std::string tampered = bytes;
      if (tampered[offset] == value) continue;
      tampered[offset] = value;
      absl::StatusOr<DocumentPayload> decoded = DecodePayload(Reseal(tampered));
      ASSERT_FALSE(decoded.ok()) << offset;
      EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss) << offset;
    }
  }
  // A NaN key: encoding refuses one, so patch it into the bytes.
  std::string text = bytes;
  const float key = SmallPayload(5).head(0, 1).keys[0];
  const std::string needle(reinterpret_cast<const char*>(&key), sizeof(key));
  const size_t at = text.find(needle);
  ASSERT_NE(at, std::string::npos);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  text.replace(at, sizeof(nan), reinterpret_cast<const char*>(&nan), sizeof(nan));
  EXPECT_EQ(DecodePayload(Reseal(text)).status().code(), absl::StatusCode::kDataLoss);
}

TEST(PayloadCodecTest, UnknownVersionIsNamed) {
  std::string bytes = *EncodePayload(SmallPayload());
  bytes[4] = 9;
  absl::StatusOr<DocumentPayload> decoded = DecodePayload(Reseal(bytes));
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(decoded.status().message().find("version 9"), std::string::npos) << decoded.status();
}

TEST(CacheIdentityTest, FingerprintIsStableAndCoversEveryField) {
  const CacheIdentity identity = TestIdentity();
  EXPECT_EQ(identity.Fingerprint(), TestIdentity().Fingerprint());
  // Pinned: a stored cache stays reusable across builds only if this never drifts.
  EXPECT_EQ(identity.Fingerprint(),
            "5850c788a63c9fcb50060ddcd0190de17a7f875991b0a6f4f4f424617fa6678c");
  EXPECT_EQ(identity.FirstDifference(TestIdentity()), "");
  CacheIdentity other = identity;
  other.ratio = 0.31;
  EXPECT_NE(other.Fingerprint(), identity.Fingerprint());
  EXPECT_EQ(identity.FirstDifference(other), "ratio");
  other = identity;
  other.kv_dtype = "bf16";
  EXPECT_NE(other.Fingerprint(), identity.Fingerprint());
  EXPECT_EQ(identity.FirstDifference(other), "kv_dtype");
  // Length-prefixed fields: moving a character across a boundary changes the fingerprint.
  other = identity;
  other.model_digest = "model-sh";
  other.tokenizer_digest = "atokenizer-sha";
  EXPECT_NE(other.Fingerprint(), identity.Fingerprint());
}

}  // namespace
}  // namespace kvd::cache_store::testing
