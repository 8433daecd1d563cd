// A document upload and a re-cut read from HTTP's JSON and from gRPC's messages resolve to the
// same thing, and a bad value is the same error with the same param from either.
#include "server/core/document_request.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "server/documents_api/document_json.h"
#include "server/grpc/upload_request.h"
#include "server/http/error_response.h"

namespace kvd::server {
namespace {

using json = nlohmann::json;

void ExpectSameUpload(const documents::DocumentUpload& a, const documents::DocumentUpload& b) {
  EXPECT_EQ(a.text, b.text);
  EXPECT_EQ(a.compression.method, b.compression.method);
  EXPECT_EQ(a.compression.ratio, b.compression.ratio);
  EXPECT_EQ(a.compression.budget_tokens, b.compression.budget_tokens);
  EXPECT_EQ(a.compression.query, b.compression.query);
  EXPECT_EQ(a.compression.kv_dtype, b.compression.kv_dtype);
  EXPECT_EQ(a.compression.merge, b.compression.merge);
  EXPECT_EQ(a.keep_full, b.keep_full);
  EXPECT_EQ(a.ttl, b.ttl);
  EXPECT_EQ(a.metadata, b.metadata);
}

absl::StatusOr<documents::DocumentUpload> FromGrpc(const v1::UploadHeader& header,
                                                   const std::string& text,
                                                   const documents::DocumentsConfig& config) {
  absl::StatusOr<DocumentUploadRequest> request = ReadUploadHeader(header, text);
  if (!request.ok()) return request.status();
  return ResolveDocumentUpload(*std::move(request), config);
}

TEST(DocumentRequestTest, BothProtocolsResolveAnUploadTheSameWay) {
  const documents::DocumentsConfig config;
  v1::UploadHeader full;
  full.mutable_compression()->set_method("snapkv");
  full.mutable_compression()->set_budget_tokens(64);
  full.mutable_compression()->set_query("who?");
  full.mutable_compression()->set_kv_dtype("int8");
  full.set_keep_full(true);
  full.set_ttl_seconds(3600);
  full.set_metadata_json(R"({"title": "t"})");
  const json full_body = {
      {"text", "the text"},
      {"compression",
       {{"method", "snapkv"}, {"budget_tokens", 64}, {"query", "who?"}, {"kv_dtype", "int8"}}},
      {"keep_full", true},
      {"ttl_seconds", 3600},
      {"metadata", {{"title", "t"}}}};
  v1::UploadHeader merged;
  merged.mutable_compression()->set_method("kvzip_heads");
  merged.mutable_compression()->set_merge(true);
  const json merged_body = {{"text", "the text"},
                            {"compression", {{"method", "kvzip_heads"}, {"merge", true}}}};
  const std::vector<std::pair<v1::UploadHeader, json>> cases = {
      {v1::UploadHeader(), {{"text", "the text"}}},  // every default
      {full, full_body},
      {merged, merged_body},
  };
  for (const auto& [header, body] : cases) {
    SCOPED_TRACE(body.dump());
    auto grpc = FromGrpc(header, "the text", config);
    auto http = ParseDocumentUpload(body, config);
    ASSERT_TRUE(grpc.ok()) << grpc.status();
    ASSERT_TRUE(http.ok()) << http.status();
    ExpectSameUpload(*grpc, *http);
    EXPECT_EQ(grpc->compression.merge, header.compression().merge());
  }
  auto defaults = ParseDocumentUpload({{"text", "x"}}, config);
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->compression.method, cache_store::CompressionMethod::kKvzip);
  EXPECT_DOUBLE_EQ(defaults->compression.ratio, config.default_ratio);
  EXPECT_EQ(defaults->compression.kv_dtype, cache_store::KvStorage::kF32);
  documents::DocumentsConfig bf16_default;
  bf16_default.default_kv_dtype = "bf16";
  EXPECT_EQ(ParseDocumentUpload({{"text", "x"}}, bf16_default)->compression.kv_dtype,
            cache_store::KvStorage::kBf16);
}

TEST(DocumentRequestTest, BadValuesAreTheSameErrorFromEitherProtocol) {
  const documents::DocumentsConfig config;
  const struct {
    json compression;  // also set on the gRPC header
    std::string param;
  } cases[] = {
      {{{"ratio", 1.5}}, "compression.ratio"},
      {{{"ratio", 0.5}, {"budget_tokens", 8}}, "compression.ratio"},
      {{{"budget_tokens", 0}}, "compression.budget_tokens"},
      {{{"method", "zip"}}, "compression.method"},
      {{{"kv_dtype", "int4"}}, "compression.kv_dtype"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.compression.dump());
    v1::UploadHeader header;
    v1::Compression& compression = *header.mutable_compression();
    if (c.compression.contains("ratio")) compression.set_ratio(c.compression["ratio"]);
    if (c.compression.contains("budget_tokens")) {
      compression.set_budget_tokens(c.compression["budget_tokens"]);
    }
    if (c.compression.contains("method")) compression.set_method(c.compression["method"]);
    if (c.compression.contains("kv_dtype")) compression.set_kv_dtype(c.compression["kv_dtype"]);
    const absl::Status grpc = FromGrpc(header, "x", config).status();
    const absl::Status http =
        ParseDocumentUpload({{"text", "x"}, {"compression", c.compression}}, config).status();
    EXPECT_EQ(grpc.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(grpc, http);
    EXPECT_EQ(ErrorFields(grpc), ErrorFields(http));
    EXPECT_EQ(ParamOf(grpc), c.param);
  }
  // A ttl too small for a duration is refused, not stored as "expires at once", and one too large
  // for a duration is refused, not stored as "never expires".
  for (const double ttl : {1e-300, 0.0, -1.0, 1e300}) {
    v1::UploadHeader header;
    header.set_ttl_seconds(ttl);
    const absl::Status tiny = FromGrpc(header, "x", config).status();
    EXPECT_EQ(ParamOf(tiny), "ttl_seconds") << ttl;
    EXPECT_EQ(tiny, ParseDocumentUpload({{"text", "x"}, {"ttl_seconds", ttl}}, config).status());
  }
  v1::UploadHeader list_metadata;
  list_metadata.set_metadata_json("[1]");
  const absl::Status metadata = FromGrpc(list_metadata, "x", config).status();
  EXPECT_EQ(ParamOf(metadata), "metadata");
  EXPECT_EQ(metadata,
            ParseDocumentUpload({{"text", "x"}, {"metadata", json::array({1})}}, config).status());
}

// A text of the wrong type says so, not that it is missing.
TEST(DocumentRequestTest, TextMustBeAString) {
  const documents::DocumentsConfig config;
  const absl::Status missing = ParseDocumentUpload(json::object(), config).status();
  EXPECT_EQ(ParamOf(missing), "text");
  EXPECT_NE(missing.message().find("required"), std::string::npos) << missing;
  const absl::Status number = ParseDocumentUpload({{"text", 5}}, config).status();
  EXPECT_EQ(ParamOf(number), "text");
  EXPECT_NE(number.message().find("must be a string"), std::string::npos) << number;
}

// gRPC's text arrives as bytes, where JSON's parser has refused what is not UTF-8: the upload
// refuses it too, with the same param.
TEST(DocumentRequestTest, TextThatIsNotUtf8IsRefusedFromGrpcAsFromHttp) {
  const documents::DocumentsConfig config;
  for (const std::string text : {"ab\xff"
                                 "cd",
                                 "\xc0\x80", "\xed\xa0\x80", "caf\xc3"}) {
    const absl::Status grpc = FromGrpc(v1::UploadHeader(), text, config).status();
    EXPECT_EQ(grpc.code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(ParamOf(grpc), "text");
  }
  EXPECT_TRUE(
      FromGrpc(v1::UploadHeader(), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82", config).ok());
}

TEST(DocumentRequestTest, ARecutTakesExactlyOneOfRatioAndBudget) {
  v1::RecutRequest both;
  both.set_ratio(0.5);
  both.set_budget_tokens(4);
  EXPECT_EQ(ParamOf(CheckRecut(ReadRecutRequest(both))), "ratio");
  EXPECT_EQ(CheckRecut(ReadRecutRequest(v1::RecutRequest())).code(),
            absl::StatusCode::kInvalidArgument);
  v1::RecutRequest ratio;
  ratio.set_ratio(0.25);
  EXPECT_TRUE(CheckRecut(ReadRecutRequest(ratio)).ok());
  auto http = ParseRecut({{"ratio", 0.25}});
  ASSERT_TRUE(http.ok());
  EXPECT_EQ(http->ratio, ReadRecutRequest(ratio).ratio);
  v1::RecutRequest zero;
  zero.set_budget_tokens(0);
  EXPECT_EQ(CheckRecut(ReadRecutRequest(zero)), ParseRecut({{"budget_tokens", 0}}).status());
}

}  // namespace
}  // namespace kvd::server
