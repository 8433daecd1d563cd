// `kvd serve` killed with SIGKILL while documents upload, then restarted on the same data
// directory, a few times over: every upload that was answered ready answers questions after
// each restart (a full cache exactly as the same prompt without it), nothing is left
// processing, and what failed is listed as failed and never served.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/integration/kvd_server_process.h"
#include "tests/support/source_dir.h"
#include "tests/unit/cache_store/key_value_documents.h"

namespace kvd::testing {
namespace {

using json = nlohmann::json;
using cache_store::testing::KeyValueDocument;

const std::string kModel = kvd::test_support::SourceDir() + "/models/kvd-tiny";
constexpr int kKills = 3;
constexpr int kUploaders = 2;
constexpr int kUploadsPerUploader = 8;  // more than the kill leaves time for
constexpr int kMaxKillDelayMs = 300;

// An upload the server answered ready.
struct ReadyUpload {
  std::string id;
  std::string method;
  KeyValueDocument document;
};

class ServeCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("kvd_serve_crash_" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "config.yaml") << "documents:\n  upload_wait_seconds: 60\n";
  }
  void TearDown() override {
    if (server_ != nullptr) {
      EXPECT_EQ(server_->Stop(SIGTERM), 0) << server_->logs();
    }
    std::filesystem::remove_all(dir_);
  }

  void Start() {
    server_ = std::make_unique<KvdServer>(
        std::vector<std::string>{"--model", kModel, "--config", (dir_ / "config.yaml").string(),
                                 "--data-dir", (dir_ / "data").string(), "--threads", "2"});
    ASSERT_GT(server_->port(), 0) << server_->logs();
  }

  HttpResult Call(const std::string& method, const std::string& path, const json& body = {}) const {
    return Curl(method, server_->url(path), body.is_null() ? "" : body.dump());
  }
  HttpResult Ask(const std::string& id, const std::string& question) const {
    return Call("POST", "/v1/chat/completions",
                {{"model", "kvd-tiny"},
                 {"messages", json::array({{{"role", "user"}, {"content", question}}})},
                 {"documents", json::array({id})},
                 {"max_tokens", 8},
                 {"temperature", 0}});
  }
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

  // Every ready upload so far answers; nothing listed is processing; failed ones are refused
  // (and counted in `failed`).
  void VerifyAfterRestart(const std::vector<ReadyUpload>& ready, int restart, int& failed) {
    for (const ReadyUpload& upload : ready) {
      const HttpResult got = Call("GET", "/v1/documents/" + upload.id);
      ASSERT_EQ(got.status, 200) << "restart " << restart << ": " << upload.id << " " << got.body;
      EXPECT_EQ(json::parse(got.body)["status"], "ready") << got.body;
      const std::string question = "Q:" + upload.document.records[0].first;
      const HttpResult answer = Ask(upload.id, question);
      ASSERT_EQ(answer.status, 200) << "restart " << restart << ": " << answer.body;
      const std::string text =
          json::parse(answer.body)["choices"][0]["message"]["content"].get<std::string>();
      if (upload.method == "none") {
        EXPECT_EQ(text, AskInline(upload.document.text, question)) << upload.id;
      }
    }
    const json list = json::parse(Call("GET", "/v1/documents?limit=100").body);
    for (const json& document : list["data"]) {
      const std::string status = document["status"];
      EXPECT_NE(status, "processing") << "restart " << restart << ": " << document.dump();
      if (status == "failed") {
        ++failed;
        const HttpResult refused = Ask(document["id"], "Q:bab");
        EXPECT_EQ(refused.status, 400) << refused.body;
      }
    }
  }

  std::filesystem::path dir_;
  std::unique_ptr<KvdServer> server_;
};

TEST_F(ServeCrashTest, UploadsAnsweredReadySurviveKillNineAndNothingHalfDoneIsServed) {
  std::mt19937 random(4242);
  std::vector<ReadyUpload> ready;
  int failed = 0;
  for (int kill = 0; kill <= kKills; ++kill) {
    ASSERT_NO_FATAL_FAILURE(Start());
    failed = 0;
    ASSERT_NO_FATAL_FAILURE(VerifyAfterRestart(ready, kill, failed));
    if (kill == kKills) break;
    // Uploads run until the server dies. The kill comes a seeded delay after a seeded number
    // of them were answered ready, so it lands among the rest.
    std::mutex mu;
    std::condition_variable answered;
    int answered_now = 0;
    std::vector<std::thread> uploaders;
    for (int u = 0; u < kUploaders; ++u) {
      const uint32_t seed = static_cast<uint32_t>(random());
      uploaders.emplace_back([&, seed, u] {
        std::mt19937 local(seed);
        for (int i = 0; i < kUploadsPerUploader; ++i) {
          const std::string method = (u + i) % 2 == 0 ? "none" : "kvzip";
          KeyValueDocument document = cache_store::testing::MakeKeyValueDocument(local, 500);
          const HttpResult posted =
              Call("POST", "/v1/documents",
                   {{"text", document.text}, {"compression", {{"method", method}}}});
          if (posted.status == 0) return;  // the server is gone
          const json body = json::parse(posted.body, nullptr, false);
          if (posted.status == 201 && body.is_object() && body["status"] == "ready") {
            std::lock_guard lock(mu);
            ready.push_back({body["id"], method, std::move(document)});
            ++answered_now;
            answered.notify_all();
          }
        }
      });
    }
    const int before_kill = std::uniform_int_distribution<int>(0, 3)(random);
    const int delay_ms = std::uniform_int_distribution<int>(0, kMaxKillDelayMs)(random);
    {
      std::unique_lock lock(mu);
      answered.wait(lock, [&] { return answered_now >= before_kill; });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    EXPECT_EQ(server_->Stop(SIGKILL), 128 + SIGKILL);
    for (std::thread& uploader : uploaders) uploader.join();
    server_.reset();
  }
  RecordProperty("ready_uploads", static_cast<int>(ready.size()));
  RecordProperty("failed_uploads", failed);  // cut off while compressing
}

}  // namespace
}  // namespace kvd::testing
