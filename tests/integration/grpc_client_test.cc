// `kvd client`, the gRPC client that ships with kvd, run as a user runs it against a real
// `kvd serve` with gRPC on: generate answers as the HTTP API does, an upload streamed in many
// pieces is the same document, a passed deadline and an unknown key end with their codes.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/integration/kvd_binary.h"
#include "tests/integration/kvd_server_process.h"
#include "tests/support/free_port.h"
#include "tests/support/source_dir.h"
#include "tests/unit/cache_store/key_value_documents.h"

namespace kvd::testing {
namespace {

using json = nlohmann::json;

const std::string kModel = kvd::test_support::SourceDir() + "/models/kvd-tiny";
constexpr char kKey[] = "key-alpha";

struct ClientResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string Quote(const std::string& arg) {
  std::string quoted = "'";
  for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string ReadAll(FILE* pipe) {
  std::string output;
  char buffer[4096];
  size_t read;
  while ((read = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, read);
  return output;
}

// Runs `kvd client ARGS` and collects its exit code, stdout and stderr.
ClientResult RunClient(const std::vector<std::string>& args) {
  static int counter = 0;
  const std::filesystem::path err =
      std::filesystem::temp_directory_path() /
      ("kvd_client_err_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
  std::string command = kvd::testing::KvdBinary() + " client";
  for (const std::string& arg : args) command += " " + Quote(arg);
  command += " 2>" + Quote(err.string()) + " </dev/null";
  ClientResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  result.out = ReadAll(pipe);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.err = ReadFile(err);
  std::filesystem::remove(err);
  return result;
}

std::string Shell(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  std::string output = ReadAll(pipe);
  pclose(pipe);
  return output;
}

// One server for the suite: tenant alpha with kKey, uploads that answer when ready.
class GrpcClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                     ("kvd_grpc_client_" + std::to_string(getpid())));
    std::filesystem::remove_all(*dir_);
    std::filesystem::create_directories(*dir_);
    std::string digest = Shell(kvd::testing::KvdBinary() + " hash-key --key " + kKey);
    while (!digest.empty() && digest.back() == '\n') digest.pop_back();
    std::ofstream(*dir_ / "config.yaml")
        << "tenants:\n  - id: alpha\n    key_sha256: [\"" << digest << "\"]\n"
        << "documents:\n  upload_wait_seconds: 30\n";
    grpc_port_ = FreeLoopbackPort();
    server_ = new KvdServer({"--model", kModel, "--config", (*dir_ / "config.yaml").string(),
                             "--data-dir", (*dir_ / "data").string(), "--threads", "2",
                             "--grpc-port", std::to_string(grpc_port_)});
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->Stop(SIGTERM), 0) << server_->logs();
    delete server_;
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  void SetUp() override {
    ASSERT_GT(server_->port(), 0) << server_->logs();
    ASSERT_NE(server_->logs().find("serving gRPC on"), std::string::npos) << server_->logs();
  }

  // `kvd client COMMAND --target ... --api-key kKey ARGS`.
  static ClientResult Client(const std::string& command, std::vector<std::string> args,
                             const std::string& key = kKey) {
    args.insert(args.begin(), {command, "--target", "127.0.0.1:" + std::to_string(grpc_port_)});
    if (!key.empty()) args.insert(args.end(), {"--api-key", key});
    return RunClient(args);
  }
  static HttpResult Http(const std::string& method, const std::string& path, const json& body) {
    return Curl(method, server_->url(path), body.dump(),
                std::string("-H 'Authorization: Bearer ") + kKey + "'");
  }

  static std::filesystem::path* dir_;
  static KvdServer* server_;
  static int grpc_port_;
};

std::filesystem::path* GrpcClientTest::dir_ = nullptr;
KvdServer* GrpcClientTest::server_ = nullptr;
int GrpcClientTest::grpc_port_ = 0;

TEST_F(GrpcClientTest, GenerateAnswersAsTheHttpApi) {
  const std::string question = "Tell me about the river and the garden.";
  const HttpResult http =
      Http("POST", "/v1/chat/completions",
           {{"model", "kvd-tiny"},
            {"messages", json::array({{{"role", "user"}, {"content", question}}})},
            {"max_tokens", 24},
            {"temperature", 0}});
  ASSERT_EQ(http.status, 200) << http.body;
  const json answer = json::parse(http.body);
  const std::string content = answer["choices"][0]["message"]["content"];
  ASSERT_FALSE(content.empty());

  const ClientResult grpc =
      Client("generate", {"--chat", question, "--max-tokens", "24", "--temperature", "0"});
  ASSERT_EQ(grpc.exit_code, 0) << grpc.err;
  EXPECT_EQ(grpc.out, content + "\n");
  EXPECT_NE(grpc.err.find(std::string("finish_reason: ") +
                          answer["choices"][0]["finish_reason"].get<std::string>()),
            std::string::npos)
      << grpc.err;
  EXPECT_NE(grpc.err.find("completion_tokens: " +
                          std::to_string(answer["usage"]["completion_tokens"].get<int>())),
            std::string::npos)
      << grpc.err;
  // Every sampling parameter is a flag: a draw from the one most likely token is greedy.
  const ClientResult top_one =
      Client("generate", {"--chat", question, "--max-tokens", "24", "--temperature", "1",
                          "--top-k", "1", "--min-p", "0.5", "--repetition-penalty", "1"});
  ASSERT_EQ(top_one.exit_code, 0) << top_one.err;
  EXPECT_EQ(top_one.out, content + "\n");
  const ClientResult refused =
      Client("generate", {"--chat", question, "--max-tokens", "4", "--top-p", "0"});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("'top_p' must be in (0, 1], got 0"), std::string::npos)
      << refused.err;
}

TEST_F(GrpcClientTest, UploadInPiecesThenAskTheDocument) {
  std::mt19937 random(3);
  const cache_store::testing::KeyValueDocument document =
      cache_store::testing::MakeKeyValueDocument(random, 600);
  const std::filesystem::path file = *dir_ / "document.txt";
  std::ofstream(file, std::ios::binary) << document.text;
  const ClientResult uploaded =
      Client("upload", {"--file", file.string(), "--method", "kvzip", "--ratio", "0.5",
                        "--kv-dtype", "int8", "--chunk-bytes", "16"});
  ASSERT_EQ(uploaded.exit_code, 0) << uploaded.err;
  const json line = json::parse(uploaded.out, nullptr, false);
  ASSERT_TRUE(line.is_object()) << uploaded.out;
  EXPECT_EQ(line["status"], "ready") << uploaded.out;
  EXPECT_EQ(line["kv_dtype"], "int8") << uploaded.out;
  EXPECT_EQ(uploaded.out.find('\n'), uploaded.out.size() - 1) << "one line: " << uploaded.out;

  for (const auto& [key, value] : {document.records[0], document.records[1]}) {
    const ClientResult asked =
        Client("generate", {"--chat", "Q:" + key, "--documents", line["id"].get<std::string>(),
                            "--max-tokens", "8", "--temperature", "0"});
    ASSERT_EQ(asked.exit_code, 0) << asked.err;
    EXPECT_EQ(asked.out, value + "\n") << key;
  }
  // A document is read before the call starts: one that is missing is the call's status.
  const ClientResult missing =
      Client("generate", {"--chat", "Q:x", "--documents", "doc-AAAAAAAAAAAAAAAAAAAAAA"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err.rfind("kvd: NOT_FOUND: ", 0), 0u) << missing.err;
  EXPECT_EQ(missing.out, "");
}

TEST_F(GrpcClientTest, PiecesNeverSplitACharacter) {
  // Pieces of one byte of text with two- to four-byte characters: each piece must stay valid
  // UTF-8 (a proto3 string), and the document must be the one HTTP stores from the same text.
  const std::string text =
      "caf\xC3\xA9 \xE2\x82\xAC 5, \xF0\x9F\x98\x80 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9";
  const std::filesystem::path file = *dir_ / "utf8.txt";
  std::ofstream(file, std::ios::binary) << text;
  const ClientResult uploaded =
      Client("upload", {"--file", file.string(), "--method", "none", "--chunk-bytes", "1"});
  ASSERT_EQ(uploaded.exit_code, 0) << uploaded.err;
  const HttpResult http =
      Http("POST", "/v1/documents", {{"text", text}, {"compression", {{"method", "none"}}}});
  ASSERT_EQ(http.status, 201) << http.body;
  EXPECT_EQ(json::parse(uploaded.out)["token_count"], json::parse(http.body)["token_count"]);
}

TEST_F(GrpcClientTest, APassedDeadlineEndsWithDeadlineExceeded) {
  const ClientResult late =
      Client("generate", {"--model", "kvd-tiny", "--prompt", "the river follows the road",
                          "--max-tokens", "1500", "--ignore-eos", "--deadline-ms", "1"});
  EXPECT_EQ(late.exit_code, 1);
  EXPECT_EQ(late.err.rfind("kvd: DEADLINE_EXCEEDED: ", 0), 0u) << late.err;
  // The server is still there.
  const ClientResult health = Client("health", {});
  EXPECT_EQ(health.exit_code, 0) << health.err;
  EXPECT_EQ(health.out, "SERVING\n");
}

TEST_F(GrpcClientTest, AnUnknownOrMissingKeyIsUnauthenticated) {
  for (const std::string key : {"key-nobody", ""}) {
    const ClientResult refused =
        Client("generate", {"--model", "kvd-tiny", "--chat", "hello"}, key);
    EXPECT_EQ(refused.exit_code, 1) << key;
    EXPECT_EQ(refused.err.rfind("kvd: UNAUTHENTICATED: ", 0), 0u) << refused.err;
    EXPECT_EQ(refused.out, "");
  }
}

TEST_F(GrpcClientTest, StructuredOutputsAsTheHttpApi) {
  const std::string schema =
      R"({"type": "object", "properties": {"b": {"type": "integer"}, "a": {"enum": ["x", "y"]}},
          "required": ["b", "a"], "additionalProperties": false})";
  // The body as text: a parsed json would sort the schema's keys.
  const HttpResult http = Curl(
      "POST", server_->url("/v1/completions"),
      R"({"model": "kvd-tiny", "prompt": "A record:", "max_tokens": 200, "temperature": 1,
          "seed": 7, "response_format": {"type": "json_schema",
                                         "json_schema": {"name": "r", "schema": )" +
          schema + "}}}",
      std::string("-H 'Authorization: Bearer ") + kKey + "'");
  ASSERT_EQ(http.status, 200) << http.body;
  const std::string text = json::parse(http.body)["choices"][0]["text"];
  const ClientResult grpc = Client("generate", {"--prompt", "A record:", "--max-tokens", "200",
                                                "--temperature", "1", "--seed", "7",
                                                "--json-schema", schema});
  ASSERT_EQ(grpc.exit_code, 0) << grpc.err;
  EXPECT_EQ(grpc.out, text + "\n");
  const json value = json::parse(text);
  EXPECT_TRUE(value["b"].is_number_integer()) << text;
  EXPECT_EQ(text.find("\"b\""), text.find('"')) << "properties in the schema's order: " << text;

  const ClientResult regex = Client("generate", {"--prompt", "Code:", "--max-tokens", "20",
                                                 "--temperature", "1", "--regex", "[a-c]{3}-\\d"});
  ASSERT_EQ(regex.exit_code, 0) << regex.err;
  EXPECT_TRUE(std::regex_match(regex.out, std::regex("[a-c]{3}-[0-9]\n"))) << regex.out;

  const ClientResult bad =
      Client("generate", {"--prompt", "x", "--json-schema", R"({"type": "integer", "multipleOf": 2})"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("multipleOf"), std::string::npos) << bad.err;
}

TEST_F(GrpcClientTest, ModelsHealthAndBadArguments) {
  const ClientResult models = Client("models", {});
  ASSERT_EQ(models.exit_code, 0) << models.err;
  const json model = json::parse(models.out, nullptr, false);
  ASSERT_TRUE(model.is_object()) << models.out;
  EXPECT_EQ(model["id"], "kvd-tiny");
  EXPECT_EQ(model["max_model_len"], 2048);

  const ClientResult service = Client("health", {"--service", "kvd.v1.InferenceService"});
  EXPECT_EQ(service.exit_code, 0) << service.err;
  EXPECT_EQ(service.out, "SERVING\n");
  const ClientResult unknown = Client("health", {"--service", "no.such.Service"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_EQ(unknown.err.rfind("kvd: NOT_FOUND: ", 0), 0u) << unknown.err;

  // No input: refused before calling (InvalidArgument exits 2); so is a server's refusal.
  EXPECT_EQ(Client("generate", {"--max-tokens", "4"}).exit_code, 2);
  const ClientResult invalid =
      Client("generate", {"--model", "kvd-tiny", "--prompt", "a", "--temperature", "-1"});
  EXPECT_EQ(invalid.exit_code, 2) << invalid.err;
  EXPECT_EQ(invalid.err.rfind("kvd: INVALID_ARGUMENT: ", 0), 0u) << invalid.err;
}

}  // namespace
}  // namespace kvd::testing
