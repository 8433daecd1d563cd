// Upload-once documents through `kvd serve` over real HTTP (curl): questions on a stored cache
// answer as the full prompt does (concurrently, at ratio 1 and compressed), documents survive
// a restart, stay private to their tenant, a corrupted payload is a clear error, re-cuts, quotas,
// expiry, failed documents' retention and quota, and every bad input's status.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "cache_store/store/document_store.h"
#include "cache_store/store/internal/keys.h"
#include "nlohmann/json.hpp"
#include "rocksdb/db.h"
#include "tests/integration/kvd_binary.h"
#include "tests/integration/kvd_server_process.h"
#include "tests/support/source_dir.h"
#include "tests/unit/cache_store/key_value_documents.h"

namespace kvd::testing {
namespace {

using json = nlohmann::json;
using cache_store::testing::KeyValueDocument;

const std::string kModel = kvd::test_support::SourceDir() + "/models/kvd-tiny";
KeyValueDocument Document(uint32_t seed, size_t bytes = 600) {
  std::mt19937 random(seed);
  return cache_store::testing::MakeKeyValueDocument(random, bytes);
}

class DocumentsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kvd_documents_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (server_ != nullptr) {
      EXPECT_EQ(server_->Stop(SIGTERM), 0) << server_->logs();
    }
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  // (Re)starts the server on this test's data directory with `documents` settings appended.
  void Start(const std::string& documents_yaml = "", std::vector<std::string> flags = {}) {
    if (server_ != nullptr) {
      EXPECT_EQ(server_->Stop(SIGTERM), 0) << server_->logs();
    }
    std::string yaml = "tenants:\n";
    for (const char* id : {"alpha", "beta", "gamma"}) {
      yaml += std::string("  - id: ") + id + "\n    key_sha256: [\"" +
              Digest(std::string("key-") + id) + "\"]\n";
      if (std::string(id) == "gamma") yaml += "    max_documents: 1\n";
    }
    yaml += "documents:\n" + documents_yaml;
    if (documents_yaml.find("upload_wait_seconds") == std::string::npos) {
      yaml += "  upload_wait_seconds: 30\n";  // uploads answer when ready: 201
    }
    std::ofstream(dir_ / "config.yaml") << yaml;
    std::vector<std::string> args = {"--model",    model_,
                                     "--config",   (dir_ / "config.yaml").string(),
                                     "--data-dir", (dir_ / "data").string(),
                                     "--threads",  "2"};
    args.insert(args.end(), flags.begin(), flags.end());
    server_ = std::make_unique<KvdServer>(args);
    ASSERT_GT(server_->port(), 0) << server_->logs();
  }

  HttpResult Call(const std::string& method, const std::string& path, const json& body = {},
                  const std::string& key = "key-alpha") const {
    return Curl(method, server_->url(path), body.is_null() ? "" : body.dump(),
                "-H 'Authorization: Bearer " + key + "'");
  }
  // Uploads and returns the document JSON; expects 201.
  json Upload(const std::string& text, const json& compression,
              const std::string& key = "key-alpha", json extra = json::object()) const {
    extra["text"] = text;
    extra["compression"] = compression;
    const HttpResult result = Call("POST", "/v1/documents", extra, key);
    EXPECT_EQ(result.status, 201) << result.body;
    return json::parse(result.body, nullptr, false);
  }
  HttpResult AskResult(const std::string& id, const std::string& question,
                       const std::string& key = "key-alpha") const {
    return Call("POST", "/v1/chat/completions",
                {{"model", "kvd-tiny"},
                 {"messages", json::array({{{"role", "user"}, {"content", question}}})},
                 {"documents", json::array({id})},
                 {"max_tokens", 8},
                 {"temperature", 0}},
                key);
  }
  std::string Ask(const std::string& id, const std::string& question) const {
    const HttpResult result = AskResult(id, question);
    EXPECT_EQ(result.status, 200) << result.body;
    const json body = json::parse(result.body, nullptr, false);
    return body.is_object() ? body["choices"][0]["message"]["content"].get<std::string>() : "";
  }
  // The same question with the document inline: a full prefill.
  std::string AskInline(const std::string& text, const std::string& question) const {
    const HttpResult result = Call(
        "POST", "/v1/chat/completions",
        {{"model", "kvd-tiny"},
         {"messages", json::array({{{"role", "user"}, {"content", text + "\n\n" + question}}})},
         {"max_tokens", 8},
         {"temperature", 0}});
    EXPECT_EQ(result.status, 200) << result.body;
    return json::parse(result.body)["choices"][0]["message"]["content"].get<std::string>();
  }
  static void ExpectError(const HttpResult& result, int status, const std::string& param = "") {
    EXPECT_EQ(result.status, status) << result.body;
    const json body = json::parse(result.body, nullptr, false);
    ASSERT_TRUE(body.is_object() && body.contains("error")) << result.body;
    EXPECT_TRUE(body["error"]["message"].is_string());
    if (!param.empty()) {
      EXPECT_EQ(body["error"]["param"], param) << result.body;
    }
  }

  // A copy of the bundled model as a base checkpoint ships: no chat template. Served from
  // the next Start().
  void UseBaseModel() {
    const std::filesystem::path base = dir_ / "base" / "kvd-tiny";  // served as kvd-tiny
    std::filesystem::create_directories(base);
    for (const char* name : {"config.json", "model.safetensors", "tokenizer.json"}) {
      std::filesystem::create_symlink(std::filesystem::path(kModel) / name, base / name);
    }
    json tokenizer_config = json::parse(std::ifstream(kModel + "/tokenizer_config.json"));
    tokenizer_config.erase("chat_template");
    std::ofstream(base / "tokenizer_config.json") << tokenizer_config.dump();
    model_ = base.string();
  }
  HttpResult Complete(const std::string& prompt, const json& documents) const {
    json body = {{"model", "kvd-tiny"}, {"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0}};
    if (!documents.empty()) body["documents"] = documents;
    return Call("POST", "/v1/completions", body);
  }

  std::filesystem::path dir_;
  std::string model_ = kModel;
  std::unique_ptr<KvdServer> server_;
};

// A base checkpoint (no chat template) serves with the default config: documents are BOS +
// their text, completions continue them exactly as the whole prompt would be answered, and
// chat is refused naming the missing template.
TEST_F(DocumentsTest, BaseModelServesCompletionsAndPlainDocumentsWithTheDefaultConfig) {
  UseBaseModel();
  Start();
  const KeyValueDocument document = Document(5);
  const json full = Upload(document.text, {{"method", "none"}});
  const json compressed = Upload(document.text, {{"method", "kvzip"}, {"ratio", 0.5}});
  ASSERT_EQ(full["status"], "ready");
  ASSERT_EQ(compressed["status"], "ready");
  const int64_t document_tokens = full["token_count"].get<int64_t>();
  for (const auto& [key, value] : document.records) {
    const std::string question =
        "\n\nQ:" + key + "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
    const HttpResult whole = Complete(document.text + question, json::array());
    const HttpResult stored = Complete(question, json::array({full["id"]}));
    const HttpResult small = Complete(question, json::array({compressed["id"]}));
    for (const HttpResult* result : {&whole, &stored, &small}) {
      ASSERT_EQ(result->status, 200) << result->body;
    }
    const json stored_body = json::parse(stored.body);
    EXPECT_EQ(stored_body["choices"][0]["text"], json::parse(whole.body)["choices"][0]["text"]);
    EXPECT_EQ(stored_body["usage"]["prompt_tokens_details"]["cached_tokens"], document_tokens);
    EXPECT_EQ(json::parse(small.body)["usage"]["prompt_tokens_details"]["cached_tokens"],
              document_tokens);
  }
  const HttpResult chat = AskResult(full["id"], "Q:" + document.records[0].first);
  ExpectError(chat, 400, "messages");
  EXPECT_THAT(chat.body, ::testing::HasSubstr("no chat template"));
}

// kvzip_heads is refused until the server has a head profile of its model; with one made by
// kvd kvzip-profile, an upload is one prefill and answers; a changed profile changes the
// identity, so documents cut under the old one are refused, not served.
TEST_F(DocumentsTest, KvzipHeadsNeedsAProfileOfTheModelAndItsDigestIsPartOfTheIdentity) {
  Start();
  const KeyValueDocument document = Document(6);
  const json heads = {{"method", "kvzip_heads"}, {"ratio", 0.5}};
  const HttpResult refused =
      Call("POST", "/v1/documents", {{"text", document.text}, {"compression", heads}});
  ExpectError(refused, 400, "compression");
  EXPECT_THAT(refused.body, ::testing::HasSubstr("kvd kvzip-profile"));

  const auto profile = [&](const std::string& name, const std::vector<std::string>& samples) {
    std::string command = kvd::testing::KvdBinary() + " kvzip-profile --model " + kModel;
    for (size_t i = 0; i < samples.size(); ++i) {
      const std::filesystem::path sample = dir_ / (name + "-sample" + std::to_string(i) + ".txt");
      std::ofstream(sample) << samples[i];
      command += " --text " + sample.string();
    }
    const std::filesystem::path out = dir_ / (name + ".json");
    Shell(command + " --out " + out.string() + " 2>&1");
    EXPECT_TRUE(std::filesystem::exists(out)) << command;
    return out.string();
  };
  const std::string first = profile("first", {Document(7).text, Document(8).text});
  Start("  head_profile: " + first + "\n");
  const json uploaded = Upload(document.text, heads);
  ASSERT_EQ(uploaded["status"], "ready") << uploaded.dump();
  EXPECT_EQ(uploaded["method"], "kvzip_heads") << uploaded.dump();
  const std::string id = uploaded["id"];
  EXPECT_EQ(Ask(id, "Q:" + document.records[0].first), document.records[0].second);

  const std::string second = profile("second", {Document(9).text});
  Start("  head_profile: " + second + "\n");
  const HttpResult stale = AskResult(id, "Q:" + document.records[0].first);
  EXPECT_NE(stale.status, 200) << stale.body;
  EXPECT_THAT(stale.body, ::testing::HasSubstr("method_version"));
}

TEST_F(DocumentsTest, ConcurrentQuestionsMatchTheFullPromptAndStayCorrectCompressed) {
  Start();
  for (uint32_t seed : {1u, 2u}) {
    const KeyValueDocument document = Document(seed);
    const json full = Upload(document.text, {{"method", "none"}});
    const json compressed = Upload(document.text, {{"method", "kvzip"}, {"ratio", 0.3}});
    ASSERT_EQ(full["status"], "ready");
    ASSERT_EQ(compressed["status"], "ready");
    EXPECT_LT(compressed["stored_bytes"].get<int64_t>(), full["stored_bytes"].get<int64_t>() / 2);
    std::vector<std::future<std::string>> stored, small;
    for (const auto& record : document.records) {
      const std::string& key = record.first;
      stored.push_back(
          std::async(std::launch::async, [&, key] { return Ask(full["id"], "Q:" + key); }));
      small.push_back(
          std::async(std::launch::async, [&, key] { return Ask(compressed["id"], "Q:" + key); }));
    }
    int inline_correct = 0, compressed_correct = 0;
    for (size_t i = 0; i < document.records.size(); ++i) {
      const auto& [key, value] = document.records[i];
      const std::string inline_answer = AskInline(document.text, "Q:" + key);
      EXPECT_EQ(stored[i].get(), inline_answer) << key;
      inline_correct += inline_answer == value;
      compressed_correct += small[i].get() == value;
    }
    EXPECT_GE(inline_correct, static_cast<int>(document.records.size()) - 1);
    EXPECT_GE(compressed_correct, inline_correct - 1) << "seed " << seed;
  }
}

TEST_F(DocumentsTest, CompletionsContinueTheDocumentAndReportCachedTokens) {
  Start();
  const KeyValueDocument document = Document(3);
  const json uploaded = Upload(document.text, {{"method", "kvzip"}, {"ratio", 0.5}});
  const auto& [key, value] = document.records[0];
  const HttpResult result = Call(
      "POST", "/v1/completions",
      {{"model", "kvd-tiny"},
       {"prompt", "\n\nQ:" + key + "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
       {"documents", json::array({uploaded["id"]})},
       {"max_tokens", 8},
       {"temperature", 0}});
  ASSERT_EQ(result.status, 200) << result.body;
  const json body = json::parse(result.body);
  EXPECT_EQ(body["choices"][0]["text"], value);
  EXPECT_EQ(body["usage"]["prompt_tokens_details"]["cached_tokens"], uploaded["token_count"]);
  EXPECT_GT(body["usage"]["prompt_tokens"].get<int64_t>(), uploaded["token_count"].get<int64_t>());
}

// A cache stored in int8 takes under a third of the f32 bytes at the same ratio, answers as
// the f32 one does, and reads back from the store after a restart exactly as it was served.
TEST_F(DocumentsTest, Int8StoredCachesTakeAFractionOfTheBytesAndAnswerTheSame) {
  Start();
  const KeyValueDocument document = Document(8);
  const json f32 = Upload(document.text, {{"method", "kvzip"}, {"ratio", 0.3}});
  const json int8 =
      Upload(document.text, {{"method", "kvzip"}, {"ratio", 0.3}, {"kv_dtype", "int8"}});
  ASSERT_EQ(int8["status"], "ready");
  EXPECT_EQ(f32["kv_dtype"], "f32");
  EXPECT_EQ(int8["kv_dtype"], "int8");
  EXPECT_EQ(int8["kept_entries"], f32["kept_entries"]);
  EXPECT_LT(int8["stored_bytes"].get<double>(), f32["stored_bytes"].get<double>() / 3);
  std::vector<std::string> served;
  int f32_correct = 0, int8_correct = 0;
  for (const auto& [key, value] : document.records) {
    served.push_back(Ask(int8["id"], "Q:" + key));
    int8_correct += served.back() == value;
    f32_correct += Ask(f32["id"], "Q:" + key) == value;
  }
  EXPECT_GE(int8_correct, f32_correct - 1);
  Start();  // a restart: the cache comes from the store, not the memory tier
  for (size_t i = 0; i < document.records.size(); ++i) {
    EXPECT_EQ(Ask(int8["id"], "Q:" + document.records[i].first), served[i]) << i;
  }
}

// A question on a document is started after the document is read (off the I/O threads): a
// streaming one still streams, and one the server refuses is still a plain error status, not
// an event stream.
TEST_F(DocumentsTest, StreamingQuestionsStreamAndTheirRefusalsAreErrorStatuses) {
  Start();
  const KeyValueDocument document = Document(6);
  const std::string id = Upload(document.text, {{"method", "kvzip"}, {"ratio", 0.5}})["id"];
  const auto& [key, value] = document.records[0];
  const json question = {
      {"model", "kvd-tiny"},
      {"prompt", "\n\nQ:" + key + "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
      {"documents", json::array({id})},
      {"max_tokens", 8},
      {"temperature", 0},
      {"stream", true}};
  const HttpResult streamed = Call("POST", "/v1/completions", question);
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  EXPECT_EQ(streamed.headers.at("content-type").rfind("text/event-stream", 0), 0u);
  std::string text;
  for (size_t at = streamed.body.find("data: {"); at != std::string::npos;
       at = streamed.body.find("data: {", at + 1)) {
    const size_t end = streamed.body.find("\n", at);
    const json chunk = json::parse(streamed.body.substr(at + 6, end - at - 6));
    text += chunk["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, value);
  EXPECT_NE(streamed.body.find("data: [DONE]"), std::string::npos);

  json missing = question;
  missing["documents"] = json::array({"doc-AAAAAAAAAAAAAAAAAAAAAA"});
  const HttpResult refused = Call("POST", "/v1/completions", missing);
  ExpectError(refused, 404, "documents");
  EXPECT_EQ(refused.headers.at("content-type"), "application/json");
  json two = question;
  two["documents"] = json::array({id, id});
  ExpectError(Call("POST", "/v1/completions", two), 400, "documents");
}

TEST_F(DocumentsTest, DocumentsSurviveARestartAndAnswerTheSame) {
  Start();
  const KeyValueDocument document = Document(4);
  const json uploaded = Upload(document.text, {{"method", "kvzip"}, {"ratio", 0.3}}, "key-alpha",
                               {{"metadata", {{"title", "restart"}}}});
  const std::string id = uploaded["id"];
  std::vector<std::string> before;
  for (const auto& [key, value] : document.records) before.push_back(Ask(id, "Q:" + key));
  Start();
  const HttpResult got = Call("GET", "/v1/documents/" + id);
  ASSERT_EQ(got.status, 200) << got.body;
  const json reread = json::parse(got.body);
  EXPECT_EQ(reread["status"], "ready");
  EXPECT_EQ(reread["metadata"]["title"], "restart");
  EXPECT_EQ(reread["stored_bytes"], uploaded["stored_bytes"]);
  for (size_t i = 0; i < document.records.size(); ++i) {
    EXPECT_EQ(Ask(id, "Q:" + document.records[i].first), before[i]);
  }
}

TEST_F(DocumentsTest, AnotherTenantsDocumentIsNotFoundExactlyLikeAMissingOne) {
  Start();
  const json uploaded = Upload(Document(5).text, {{"method", "kvzip"}, {"ratio", 0.3}});
  const std::string id = uploaded["id"];
  const HttpResult theirs = Call("GET", "/v1/documents/" + id, {}, "key-beta");
  const HttpResult missing =
      Call("GET", "/v1/documents/doc-AAAAAAAAAAAAAAAAAAAAAA", {}, "key-beta");
  ExpectError(theirs, 404);
  ExpectError(missing, 404);
  // Same answer but for the id itself.
  std::string theirs_body = theirs.body, missing_body = missing.body;
  theirs_body.replace(theirs_body.find(id), id.size(), "ID");
  missing_body.replace(missing_body.find("doc-AAAAAAAAAAAAAAAAAAAAAA"), 26, "ID");
  EXPECT_EQ(theirs_body, missing_body);
  ExpectError(Call("DELETE", "/v1/documents/" + id, {}, "key-beta"), 404);
  ExpectError(AskResult(id, "Q:bab", "key-beta"), 404, "documents");
  ExpectError(Call("POST", "/v1/documents/" + id + "/recut", {{"ratio", 0.1}}, "key-beta"), 404);
  const json list = json::parse(Call("GET", "/v1/documents", {}, "key-beta").body);
  EXPECT_TRUE(list["data"].empty());
  EXPECT_EQ(Call("GET", "/v1/documents/" + id).status, 200) << "the owner still sees it";
}

TEST_F(DocumentsTest, CorruptedPayloadIsAClearErrorNotACrashOrAWrongAnswer) {
  Start();
  const KeyValueDocument document = Document(6);
  const std::string corrupt = Upload(document.text, {{"method", "kvzip"}, {"ratio", 0.3}})["id"];
  const std::string intact = Upload(document.text, {{"method", "kvzip"}, {"ratio", 0.3}})["id"];
  EXPECT_EQ(server_->Stop(SIGTERM), 0) << server_->logs();
  {
    std::vector<rocksdb::ColumnFamilyDescriptor> families = {
        {rocksdb::kDefaultColumnFamilyName, {}},
        {cache_store::internal::kMetaFamily, {}},
        {cache_store::internal::kKvFamily, {}}};
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(
        rocksdb::DB::Open({}, (dir_ / "data/documents").string(), families, &handles, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    const std::string key = cache_store::internal::DocumentKey("alpha", corrupt);
    std::string value;
    ASSERT_TRUE(db->Get({}, handles[2], key, &value).ok());
    value[value.size() / 2] ^= 0x40;
    ASSERT_TRUE(db->Put({}, handles[2], key, value).ok());
    for (auto* handle : handles) ASSERT_TRUE(db->DestroyColumnFamilyHandle(handle).ok());
    ASSERT_TRUE(db->Close().ok());
  }
  server_.reset();
  Start();
  const HttpResult asked = AskResult(corrupt, "Q:" + document.records[0].first);
  EXPECT_EQ(asked.status, 500) << asked.body;
  EXPECT_NE(asked.body.find("corrupt"), std::string::npos) << asked.body;
  EXPECT_EQ(Ask(intact, "Q:" + document.records[0].first), document.records[0].second);
  EXPECT_EQ(Curl("GET", server_->url("/health")).status, 200);
}

TEST_F(DocumentsTest, RecutKeepsFewerEntriesAndGrowsOnlyWithKeepFull) {
  Start();
  const KeyValueDocument document = Document(7);
  const json half = Upload(document.text, {{"method", "kvzip"}, {"ratio", 0.5}});
  const std::string id = half["id"];
  const HttpResult cut = Call("POST", "/v1/documents/" + id + "/recut", {{"ratio", 0.25}});
  ASSERT_EQ(cut.status, 200) << cut.body;
  const json smaller = json::parse(cut.body);
  EXPECT_NEAR(smaller["ratio"].get<double>(), 0.25, 0.01);
  EXPECT_LT(smaller["stored_bytes"].get<int64_t>(), half["stored_bytes"].get<int64_t>());
  EXPECT_LT(smaller["kept_entries"].get<int64_t>(), half["kept_entries"].get<int64_t>());
  EXPECT_EQ(Ask(id, "Q:" + document.records[0].first), document.records[0].second);
  ExpectError(Call("POST", "/v1/documents/" + id + "/recut", {{"ratio", 0.5}}), 400, "ratio");

  const json full = Upload(document.text, {{"method", "kvzip"}, {"ratio", 0.2}}, "key-alpha",
                           {{"keep_full", true}});
  const HttpResult grown =
      Call("POST", "/v1/documents/" + full["id"].get<std::string>() + "/recut", {{"ratio", 0.6}});
  ASSERT_EQ(grown.status, 200) << grown.body;
  EXPECT_NEAR(json::parse(grown.body)["ratio"].get<double>(), 0.6, 0.01);
  EXPECT_EQ(Ask(full["id"], "Q:" + document.records[1].first), document.records[1].second);

  const json none = Upload(document.text, {{"method", "none"}});
  ExpectError(
      Call("POST", "/v1/documents/" + none["id"].get<std::string>() + "/recut", {{"ratio", 0.5}}),
      400);
}

// compression.merge folds the dropped entries into the kept ones: the same entries are kept,
// the cache answers, re-cuts (from a stored cut and from a whole cache) fold too, and only the
// methods with scores to weigh by take it.
TEST_F(DocumentsTest, MergedUploadsKeepTheSameEntriesAnswerAndRecut) {
  Start();
  const KeyValueDocument document = Document(12);
  const json plain = Upload(document.text, {{"method", "kvzip"}, {"ratio", 0.5}});
  const json merged = Upload(document.text, {{"method", "kvzip"}, {"ratio", 0.5}, {"merge", true}});
  const json whole = Upload(document.text, {{"method", "kvzip"}, {"ratio", 0.5}, {"merge", true}},
                            "key-alpha", {{"keep_full", true}});
  ASSERT_EQ(merged["status"], "ready") << merged.dump();
  EXPECT_EQ(merged["merge"], true);
  EXPECT_EQ(plain["merge"], false);
  EXPECT_EQ(merged["kept_entries"], plain["kept_entries"]);
  for (const json* uploaded : {&merged, &whole}) {
    const std::string id = (*uploaded)["id"];
    EXPECT_EQ(Ask(id, "Q:" + document.records[0].first), document.records[0].second);
    const HttpResult cut = Call("POST", "/v1/documents/" + id + "/recut", {{"ratio", 0.3}});
    ASSERT_EQ(cut.status, 200) << cut.body;
    EXPECT_EQ(json::parse(cut.body)["merge"], true);
    EXPECT_EQ(Ask(id, "Q:" + document.records[1].first), document.records[1].second);
  }
  ExpectError(
      Call("POST", "/v1/documents",
           {{"text", document.text}, {"compression", {{"method", "h2o"}, {"merge", true}}}}),
      400, "compression");
  ExpectError(
      Call("POST", "/v1/documents", {{"text", document.text}, {"compression", {{"merge", "yes"}}}}),
      400, "compression.merge");
}

TEST_F(DocumentsTest, SlowCompressionAnswers202AndReportsProgressUntilReady) {
  Start("  upload_wait_seconds: 0\n");
  const HttpResult posted =
      Call("POST", "/v1/documents",
           {{"text", Document(8, 900).text}, {"compression", {{"method", "kvzip"}}}});
  // The upload answers before the engine can have run the compression's first step.
  ASSERT_EQ(posted.status, 202) << posted.body;
  const json accepted = json::parse(posted.body);
  EXPECT_EQ(accepted["status"], "processing");
  EXPECT_TRUE(accepted["progress"].is_number());
  std::string status = accepted["status"];
  for (int i = 0; i < 2000 && status == "processing"; ++i) {
    status = json::parse(
        Call("GET", "/v1/documents/" + accepted["id"].get<std::string>()).body)["status"];
  }
  EXPECT_EQ(status, "ready");
  EXPECT_NEAR(accepted["ratio"].get<double>(), 0.3, 0.01) << "the server's default ratio";
}

TEST_F(DocumentsTest, ListPagesDeleteAndExpiry) {
  // A sweep far off: an expired document must be gone without it.
  Start("  expiry_sweep_seconds: 3600\n");
  std::vector<std::string> ids;
  for (uint32_t seed = 10; seed < 13; ++seed) {
    ids.push_back(
        Upload(Document(seed, 200).text, {{"method", "streaming"}, {"ratio", 0.5}})["id"]);
  }
  std::sort(ids.begin(), ids.end());
  std::vector<std::string> listed;
  std::string after;
  for (int page = 0; page < 5; ++page) {
    const json list = json::parse(
        Call("GET", "/v1/documents?limit=2" + (after.empty() ? "" : "&after=" + after)).body);
    for (const json& document : list["data"]) listed.push_back(document["id"]);
    if (!list["has_more"].get<bool>()) break;
    after = list["last_id"];
  }
  EXPECT_EQ(listed, ids);
  ExpectError(Call("GET", "/v1/documents?limit=0"), 400, "limit");
  ExpectError(Call("GET", "/v1/documents?colour=red"), 400, "colour");

  const HttpResult deleted = Call("DELETE", "/v1/documents/" + ids[0]);
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_EQ(json::parse(deleted.body)["deleted"], true);
  const HttpResult gone = Call("GET", "/v1/documents/" + ids[0]);
  ExpectError(gone, 404);
  EXPECT_EQ(json::parse(gone.body)["error"]["code"], "document_not_found") << gone.body;
  ExpectError(Call("DELETE", "/v1/documents/" + ids[0]), 404);

  // Past its expiry a document is gone at once, to every read and question, whenever the sweep
  // deletes it.
  const KeyValueDocument brief = Document(20, 200);
  const json short_lived =
      Upload(brief.text, {{"method", "none"}}, "key-alpha", {{"ttl_seconds", 1.5}});
  ASSERT_TRUE(short_lived["expires_at"].is_number());
  const std::string brief_id = short_lived["id"];
  EXPECT_EQ(Call("GET", "/v1/documents/" + brief_id).status, 200);
  std::this_thread::sleep_until(
      std::chrono::system_clock::from_time_t(short_lived["expires_at"].get<int64_t>()) +
      std::chrono::milliseconds(1100));
  ExpectError(Call("GET", "/v1/documents/" + brief_id), 404);
  const json page = json::parse(Call("GET", "/v1/documents?limit=100").body);
  for (const json& listed_document : page["data"]) EXPECT_NE(listed_document["id"], brief_id);
  ExpectError(
      Call("POST", "/v1/chat/completions",
           {{"model", "kvd-tiny"},
            {"documents", {brief_id}},
            {"messages", {{{"role", "user"}, {"content", "Q:" + brief.records[0].first}}}}}),
      404);
}

TEST_F(DocumentsTest, IdsNameTheirReplicaAndOtherReplicasIdsAreMisdirected) {
  Start("", {"--replica", "kvd-0"});
  const KeyValueDocument document = Document(40, 300);
  const HttpResult posted =
      Call("POST", "/v1/documents", {{"text", document.text}, {"compression", {{"ratio", 0.5}}}});
  ASSERT_EQ(posted.status, 201) << posted.body;
  EXPECT_EQ(posted.headers.at("x-kvd-replica"), "kvd-0");
  const json uploaded = json::parse(posted.body);
  const std::string id = uploaded["id"];
  EXPECT_EQ(id.rfind("doc-kvd-0-", 0), 0u) << id;
  EXPECT_EQ(uploaded["replica"], "kvd-0");
  EXPECT_EQ(Ask(id, "Q:" + document.records[0].first), document.records[0].second);

  // The same id shape from replica kvd-1: 421 and where to go, for every kind of call.
  const std::string elsewhere = "doc-kvd-1-" + id.substr(id.size() - 22);
  const HttpResult got = Call("GET", "/v1/documents/" + elsewhere);
  ExpectError(got, 421);
  EXPECT_EQ(json::parse(got.body)["error"]["code"], "misdirected_request");
  EXPECT_NE(got.body.find("X-Kvd-Replica: kvd-1"), std::string::npos) << got.body;
  ExpectError(Call("DELETE", "/v1/documents/" + elsewhere), 421);
  ExpectError(Call("POST", "/v1/documents/" + elsewhere + "/recut", {{"ratio", 0.1}}), 421);
  ExpectError(AskResult(elsewhere, "Q:bab"), 421, "documents");
  // Ids of a server without a replica name stay valid everywhere: not found here, not 421.
  ExpectError(Call("GET", "/v1/documents/doc-" + id.substr(id.size() - 22)), 404);
}

TEST_F(DocumentsTest, QuotasAndBadInputsGetClearErrors) {
  Start("  max_document_bytes: 2000\n");
  const std::string text = Document(30, 300).text;
  ExpectError(Call("POST", "/v1/documents", {{"compression", {{"method", "kvzip"}}}}), 400, "text");
  ExpectError(Call("POST", "/v1/documents", {{"text", ""}}), 400, "text");
  ExpectError(Call("POST", "/v1/documents", {{"text", std::string(2001, 'a')}}), 413, "text");
  ExpectError(Call("POST", "/v1/documents", {{"text", text}, {"compression", {{"method", "zip"}}}}),
              400, "compression.method");
  ExpectError(Call("POST", "/v1/documents", {{"text", text}, {"compression", {{"ratio", 1.5}}}}),
              400, "compression.ratio");
  ExpectError(
      Call("POST", "/v1/documents", {{"text", text}, {"compression", {{"kv_dtype", "int4"}}}}), 400,
      "compression.kv_dtype");
  ExpectError(Call("POST", "/v1/documents",
                   {{"text", text}, {"compression", {{"method", "snapkv"}, {"ratio", 0.3}}}}),
              400, "compression");
  ExpectError(Call("POST", "/v1/documents", {{"text", text}, {"colour", "red"}}), 400, "colour");
  ExpectError(Call("POST", "/v1/documents", {{"text", text}, {"ttl_seconds", -1}}), 400,
              "ttl_seconds");
  ExpectError(Curl("POST", server_->url("/v1/documents"), "{not json",
                   "-H 'Authorization: Bearer key-alpha'"),
              400);
  ExpectError(Call("POST", "/v1/documents", {{"text", text}}, "key-wrong"), 401);

  // gamma may store one document.
  Upload(text, {{"method", "none"}}, "key-gamma");
  HttpResult over = Call("POST", "/v1/documents", {{"text", text}}, "key-gamma");
  ExpectError(over, 429);
  EXPECT_FALSE(over.headers["retry-after"].empty());

  const std::string id = Upload(text, {{"method", "kvzip"}, {"ratio", 0.5}})["id"];
  const json ask = {{"model", "kvd-tiny"},
                    {"messages", json::array({{{"role", "user"}, {"content", "Q:bab"}}})}};
  json two = ask;
  two["documents"] = json::array({id, id});
  ExpectError(Call("POST", "/v1/chat/completions", two), 400, "documents");
  json wrong_type = ask;
  wrong_type["documents"] = id;
  ExpectError(Call("POST", "/v1/chat/completions", wrong_type), 400, "documents");
  json unknown = ask;
  unknown["documents"] = json::array({"doc-AAAAAAAAAAAAAAAAAAAAAA"});
  ExpectError(Call("POST", "/v1/chat/completions", unknown), 404, "documents");
  json with_system = ask;
  with_system["documents"] = json::array({id});
  with_system["messages"] = json::array(
      {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Q:bab"}}});
  ExpectError(Call("POST", "/v1/chat/completions", with_system), 400, "messages");
  json too_long = ask;
  too_long["documents"] = json::array({id});
  too_long["max_tokens"] = 2048;
  ExpectError(Call("POST", "/v1/chat/completions", too_long), 400);
  ExpectError(
      Call("POST", "/v1/documents/" + id + "/recut", {{"ratio", 0.2}, {"budget_tokens", 3}}), 400,
      "ratio");
  EXPECT_EQ(Curl("GET", server_->url("/health")).status, 200);
}

// A document a previous process left processing, as a kill -9 mid-compression leaves it.
std::string StoreAbandonedUpload(const std::filesystem::path& data_dir, const std::string& tenant) {
  absl::StatusOr<std::unique_ptr<cache_store::DocumentStore>> store =
      cache_store::DocumentStore::Open(data_dir / "documents");
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return "";
  cache_store::DocumentMeta meta;
  meta.id = *cache_store::DocumentStore::NewDocumentId();
  meta.tenant = tenant;
  meta.status = cache_store::DocumentStatus::kProcessing;
  meta.created = absl::Now();
  meta.identity.method = "kvzip";
  meta.identity.ratio = 0.3;
  EXPECT_TRUE((*store)->PutMeta(meta).ok());
  return meta.id;
}

TEST_F(DocumentsTest, FailedDocumentsCountAgainstNoQuotaAndAreSweptAfterTheirRetention) {
  // gamma may store one document; a crash left one of its uploads compressing.
  const std::string abandoned = StoreAbandonedUpload(dir_ / "data", "gamma");
  Start("  expiry_sweep_seconds: 0.1\n");
  const HttpResult got = Call("GET", "/v1/documents/" + abandoned, {}, "key-gamma");
  ASSERT_EQ(got.status, 200) << got.body;
  const json failed = json::parse(got.body);
  EXPECT_EQ(failed["status"], "failed");
  EXPECT_NE(failed["failure_reason"].get<std::string>().find("stopped before the compression"),
            std::string::npos)
      << got.body;
  // Listed for the default retention of an hour, so the client can see why.
  ASSERT_TRUE(failed["expires_at"].is_number()) << got.body;
  EXPECT_GT(failed["expires_at"].get<int64_t>(), absl::ToUnixSeconds(absl::Now()) + 3000);
  ExpectError(AskResult(abandoned, "Q:bab", "key-gamma"), 400, "documents");
  // It does not count: gamma can still store its one document, and then no other.
  const KeyValueDocument document = Document(50, 300);
  const std::string ready = Upload(document.text, {{"method", "none"}}, "key-gamma")["id"];
  ExpectError(Call("POST", "/v1/documents", {{"text", document.text}}, "key-gamma"), 429);
  EXPECT_EQ(json::parse(Call("GET", "/v1/documents", {}, "key-gamma").body)["data"].size(), 2u);

  // With no retention, the next sweep removes a failed document; ready ones stay.
  EXPECT_EQ(server_->Stop(SIGTERM), 0) << server_->logs();
  server_.reset();
  const std::string swept = StoreAbandonedUpload(dir_ / "data", "gamma");
  Start("  expiry_sweep_seconds: 0.1\n  failed_retention_seconds: 0\n");
  int status = 200;
  for (int i = 0; i < 3000 && status == 200; ++i) {
    status = Call("GET", "/v1/documents/" + swept, {}, "key-gamma").status;
  }
  EXPECT_EQ(status, 404) << "a failed document is swept once its retention passed";
  EXPECT_EQ(Call("GET", "/v1/documents/" + abandoned, {}, "key-gamma").status, 200)
      << "each failed document keeps the retention it failed with";
  const HttpResult asked = AskResult(ready, "Q:" + document.records[0].first, "key-gamma");
  EXPECT_EQ(asked.status, 200) << asked.body;
}

}  // namespace
}  // namespace kvd::testing
