// Compact stored caches: int8 and bf16 keys and values within their stated error, rounding
// that is idempotent so a stored payload decodes to exactly what is served, scores that keep
// their order and their always-kept marks, and compact bytes that the decoder refuses when
// truncated or flipped, as it does f32 ones.
#include "cache_store/store/kv_storage.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "base/sha256.h"
#include "cache_store/store/internal/byte_io.h"
#include "cache_store/store/payload_codec.h"
#include "kernels/dtype.h"
#include "tests/unit/cache_store/test_payload.h"

namespace kvd::cache_store::testing {
namespace {

// A payload with the geometry of the bundled model's heads, values as a transformer's keys
// have them: mostly small, a few large channels.
DocumentPayload HeadSizedPayload(uint32_t seed) {
  DocumentPayload payload = SmallPayload(seed, /*num_layers=*/2, /*num_kv_heads=*/2,
                                         /*head_dim=*/32, /*original_length=*/40);
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (HeadKv& head : payload.heads) {
    // Every head keeps half its entries.
    head.positions.clear();
    for (int32_t p = 0; p < payload.original_length; p += 2) head.positions.push_back(p);
    head.keys.resize(head.positions.size() * payload.head_dim);
    head.values.resize(head.keys.size());
    head.log_votes.assign(head.positions.size(), 0.0f);
    for (size_t i = 0; i < head.keys.size(); ++i) {
      head.keys[i] = normal(random) * (i % 32 == 3 ? 12.0f : 1.0f);
      head.values[i] = normal(random) * 0.3f;
    }
  }
  payload.head(1, 1).scores[4] = std::numeric_limits<float>::infinity();  // an always-kept entry
  payload.head(1, 1).scores[6] = 1e6f;                                    // beyond f16
  return payload;
}

TEST(KvStorageTest, NamesRoundTripAndUnknownOnesAreRefused) {
  for (KvStorage storage : {KvStorage::kF32, KvStorage::kBf16, KvStorage::kInt8}) {
    EXPECT_EQ(ParseKvStorage(KvStorageName(storage)).value(), storage);
  }
  EXPECT_EQ(ParseKvStorage("int4").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(KvStorageTest, Int8IsWithinHalfAStepOfEachEntrysLargestAndBf16WithinItsRounding) {
  const DocumentPayload original = HeadSizedPayload(1);
  for (KvStorage storage : {KvStorage::kInt8, KvStorage::kBf16}) {
    DocumentPayload rounded = original;
    RoundForStorage(storage, rounded);
    EXPECT_EQ(rounded.storage, storage);
    const int32_t dim = original.head_dim;
    for (size_t h = 0; h < original.heads.size(); ++h) {
      const HeadKv& before = original.heads[h];
      const HeadKv& after = rounded.heads[h];
      for (const auto& [x, y] :
           {std::pair{&before.keys, &after.keys}, std::pair{&before.values, &after.values}}) {
        for (size_t e = 0; e < x->size(); e += dim) {
          float largest = 0.0f;
          for (int32_t i = 0; i < dim; ++i) largest = std::max(largest, std::fabs((*x)[e + i]));
          for (int32_t i = 0; i < dim; ++i) {
            const float error = std::fabs((*x)[e + i] - (*y)[e + i]);
            if (storage == KvStorage::kInt8) {
              // Half a step of max|x| / 127, the step's bf16 rounding included.
              EXPECT_LE(error, largest / 254.0f * 1.004f) << h << " " << e + i;
            } else {
              EXPECT_LE(error, std::fabs((*x)[e + i]) / 256.0f) << h << " " << e + i;
            }
          }
        }
      }
      EXPECT_EQ(after.positions, before.positions);
    }
  }
}

// The scores a re-cut reads, the kept entries', keep their order; the others are dropped.
TEST(KvStorageTest, KeptScoresKeepTheirOrderAndAlwaysKeptMarks) {
  DocumentPayload payload = HeadSizedPayload(2);
  const std::vector<float> before = payload.head(1, 1).scores;
  RoundForStorage(KvStorage::kInt8, payload);
  const std::vector<float>& after = payload.head(1, 1).scores;
  EXPECT_TRUE(std::isinf(after[4]));
  EXPECT_EQ(after[6], 65504.0f);  // clamped, not made always-kept
  EXPECT_EQ(after[5], 0.0f);      // no entry holds odd positions
  for (size_t i = 0; i < before.size(); i += 2) {
    for (size_t j = 0; j < before.size(); j += 2) {
      if (before[i] < before[j]) {
        EXPECT_LE(after[i], after[j]) << i << " " << j;
      }
    }
  }
}

TEST(KvStorageTest, RoundingIsIdempotentAndTheCompactFormDecodesToExactlyTheServedPayload) {
  for (KvStorage storage : {KvStorage::kInt8, KvStorage::kBf16}) {
    DocumentPayload payload = HeadSizedPayload(3);
    RoundForStorage(storage, payload);
    DocumentPayload again = payload;
    RoundForStorage(storage, again);
    EXPECT_EQ(again, payload) << KvStorageName(storage);
    absl::StatusOr<std::string> bytes = EncodePayload(payload);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    EXPECT_EQ((*bytes)[4], static_cast<char>(kCompactPayloadFormatVersion));
    absl::StatusOr<DocumentPayload> decoded = DecodePayload(*bytes);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(*decoded, payload) << KvStorageName(storage);
  }
}

TEST(KvStorageTest, CompactFormsTakeAFractionOfTheF32Bytes) {
  const DocumentPayload f32 = HeadSizedPayload(4);
  const double f32_bytes = static_cast<double>(EncodePayload(f32)->size());
  DocumentPayload int8 = f32, bf16 = f32;
  RoundForStorage(KvStorage::kInt8, int8);
  RoundForStorage(KvStorage::kBf16, bf16);
  // Head dim 32, half the entries kept: an f32 entry is 264 bytes and two positions' scores 8
  // more; int8, 70 + a position's byte + its score's 2; bf16, 130 + 1 + 2.
  EXPECT_LT(static_cast<double>(EncodePayload(int8)->size()) / f32_bytes, 0.35);
  EXPECT_LT(static_cast<double>(EncodePayload(bf16)->size()) / f32_bytes, 0.55);
}

TEST(KvStorageTest, CompactBytesThatAreTruncatedOrFlippedAreRefused) {
  DocumentPayload payload = SmallPayload(6);
  RoundForStorage(KvStorage::kInt8, payload);
  const std::string bytes = *EncodePayload(payload);
  for (size_t size = 0; size < bytes.size(); ++size) {
    EXPECT_EQ(DecodePayload(bytes.substr(0, size)).status().code(), absl::StatusCode::kDataLoss)
        << size;
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string flipped = bytes;
    flipped[i] = static_cast<char>(flipped[i] ^ 0x40);
    absl::StatusOr<DocumentPayload> decoded = DecodePayload(flipped);
    if (decoded.ok()) {
      EXPECT_EQ(*decoded, payload) << "byte " << i;
    } else {
      EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss) << "byte " << i;
    }
  }
}

// A framed compact int8 payload of one (layer, kv head) of dimension 2 and two positions,
// position 1 kept: its gap's varint bytes, and its key's scale and codes as given.
std::string CompactBytes(std::string_view gap, uint16_t key_scale, int8_t key0, int8_t key1,
                         uint32_t token_ids = 2) {
  internal::ByteWriter body;
  for (uint32_t field : {1u, 1u, 2u, 2u}) body.PutU32(field);
  body.PutU8(static_cast<uint8_t>(KvStorage::kInt8));
  body.PutString("<|begin_of_text|>doc");
  body.PutU64(token_ids);  // one per position
  for (uint32_t i = 0; i < token_ids; ++i) body.PutU32(100 + i);
  body.PutU32(1);
  body.PutBytes(gap);
  body.PutU16(key_scale);
  body.PutU8(static_cast<uint8_t>(key0));
  body.PutU8(static_cast<uint8_t>(key1));
  body.PutU16(0);  // a zero value: scale 0, codes 0
  body.PutU16(0);
  body.PutU16(0);                          // log-vote 0
  body.PutU16(kernels::FloatToF16(1.0f));  // the kept entry's score
  internal::ByteWriter out;
  out.PutBytes("KVDP");
  out.PutU32(kCompactPayloadFormatVersion);
  out.PutU64(body.bytes().size());
  out.PutBytes(body.bytes());
  const base::Sha256Digest digest = base::Sha256(out.bytes());
  out.PutBytes(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
  return out.Release();
}

// Each stored entry has exactly one encoding, the encoder's, so whatever decodes encodes back
// to the same bytes: codes that do not reach ±127, a negative scale, a code of -128 or a varint
// with a trailing zero byte are refused even under a valid checksum, as are more positions than
// token ids.
TEST(KvStorageTest, OnlyTheEncodersFormOfAnEntryDecodes) {
  const float key[2] = {0.5f, -1.0f};
  const uint16_t scale = Int8Scale(key, 2);
  int8_t codes[2];
  Int8Codes(key, 2, scale, codes);
  ASSERT_EQ(codes[1], -127);
  const std::string canonical = CompactBytes("\x01", scale, codes[0], codes[1]);
  absl::StatusOr<DocumentPayload> decoded = DecodePayload(canonical);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->head(0, 0).positions, std::vector<int32_t>{1});
  EXPECT_EQ(*EncodePayload(*decoded), canonical);
  for (const std::string& bytes :
       {CompactBytes("\x01", scale, codes[0] / 2, codes[1] / 2),     // codes below ±127
        CompactBytes("\x01", static_cast<uint16_t>(scale | 0x8000),  // a negative scale
                     static_cast<int8_t>(-codes[0]), static_cast<int8_t>(-codes[1])),
        CompactBytes("\x01", scale, codes[0], -128),
        CompactBytes(std::string("\x81\x00", 2), scale, codes[0], codes[1]),
        CompactBytes("\x01", 0x7f80, 0, 3),  // an infinite scale
        // Fewer token ids than positions: the dense scores it would decode to are unbounded.
        CompactBytes("\x01", scale, codes[0], codes[1], /*token_ids=*/1)}) {
    EXPECT_EQ(DecodePayload(bytes).status().code(), absl::StatusCode::kDataLoss);
  }
}

}  // namespace
}  // namespace kvd::cache_store::testing
