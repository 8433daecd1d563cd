// The stored JSON form of a document's meta: what EncodeMeta writes decodes to the same meta,
// and numbers stored in the wrong form are refused as DataLoss rather than converted.
#include "cache_store/store/document_meta.h"

#include <gtest/gtest.h>

#include <string>

#include "nlohmann/json.hpp"

namespace kvd::cache_store {
namespace {

DocumentMeta SampleMeta() {
  DocumentMeta meta;
  meta.id = "doc-1";
  meta.tenant = "team-a";
  meta.status = DocumentStatus::kReady;
  meta.created = absl::FromUnixMicros(1'733'000'000'000'000);
  meta.token_count = 412;
  meta.kept_entries = 3955;
  meta.stored_bytes = 260'000;
  meta.metadata = {{"title", "Q3"}};
  meta.identity = {"ab", "cd", "f32", "kvzip", "kvzip-1", 0.3};
  return meta;
}

TEST(DocumentMetaTest, EncodedMetaDecodesToTheSameMeta) {
  const DocumentMeta meta = SampleMeta();
  absl::StatusOr<DocumentMeta> decoded = DecodeMeta(EncodeMeta(meta));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, meta);
}

TEST(DocumentMetaTest, EveryHomeRoundTripsAndAnOlderMetaIsLocal) {
  for (DocumentHome home : {DocumentHome::kLocal, DocumentHome::kShared, DocumentHome::kCopy}) {
    DocumentMeta meta = SampleMeta();
    meta.home = home;
    absl::StatusOr<DocumentMeta> decoded = DecodeMeta(EncodeMeta(meta));
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->home, home) << DocumentHomeName(home);
  }
  nlohmann::json stored = nlohmann::json::parse(EncodeMeta(SampleMeta()));
  stored.erase("home");
  EXPECT_EQ(DecodeMeta(stored.dump())->home, DocumentHome::kLocal);
  stored["home"] = "elsewhere";
  EXPECT_EQ(DecodeMeta(stored.dump()).status().code(), absl::StatusCode::kDataLoss);
}

TEST(DocumentMetaTest, OnlyAReadyDocumentOfTheSameIdentityIsReusable) {
  DocumentMeta meta = SampleMeta();
  EXPECT_TRUE(CheckReusable(meta, meta.identity).ok());
  CacheIdentity other = meta.identity;
  other.ratio = 0.2;
  const absl::Status differs = CheckReusable(meta, other);
  EXPECT_EQ(differs.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(differs.message().find("another ratio"), absl::string_view::npos) << differs;
  meta.status = DocumentStatus::kProcessing;
  EXPECT_EQ(CheckReusable(meta, meta.identity).code(), absl::StatusCode::kFailedPrecondition);
}

// The method and ratio live in the identity alone; the stored JSON repeats them at the top
// (as metas have always been written, so older readers still find them) and reads them back
// from the identity.
TEST(DocumentMetaTest, MethodAndRatioAreTheIdentitys) {
  const nlohmann::json stored = nlohmann::json::parse(EncodeMeta(SampleMeta()));
  EXPECT_EQ(stored["method"], "kvzip");
  EXPECT_EQ(stored["ratio"], 0.3);
  EXPECT_EQ(stored["identity"]["method"], "kvzip");
  nlohmann::json edited = stored;
  edited["ratio"] = 0.9;
  edited["method"] = "h2o";
  absl::StatusOr<DocumentMeta> decoded = DecodeMeta(edited.dump());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->identity.method, "kvzip");
  EXPECT_EQ(decoded->identity.ratio, 0.3);
}

TEST(DocumentMetaTest, RefusesNumbersNotStoredAsInt64) {
  // A float was truncated (1.5 read as format 1), or converted out of range (1e300: undefined
  // behaviour, on x86 a negative count); an integer past int64 wrapped.
  const struct {
    const char* key;
    nlohmann::json value;
  } cases[] = {{"format", 1.5},       {"token_count", 1e300},
               {"kept_entries", 2.5}, {"stored_bytes", 18446744073709551615ull},
               {"created_us", 1e300}, {"expires_us", -0.5}};
  for (const auto& c : cases) {
    nlohmann::json stored = nlohmann::json::parse(EncodeMeta(SampleMeta()));
    stored[c.key] = c.value;
    absl::StatusOr<DocumentMeta> decoded = DecodeMeta(stored.dump());
    ASSERT_FALSE(decoded.ok()) << c.key << " = " << c.value;
    EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss) << decoded.status();
    EXPECT_NE(decoded.status().message().find(c.key), std::string_view::npos) << decoded.status();
  }
}

}  // namespace
}  // namespace kvd::cache_store
