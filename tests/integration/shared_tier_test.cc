// Several `kvd serve` processes sharing one real Redis (store.remote): any replica answers any
// document as the one that stored it does and continues any stored response, a delete on one is
// seen by all, a replica killed while
// uploading loses nothing it acknowledged, and a Redis that goes away refuses writes with 503
// and Retry-After while local copies keep answering, until it is back.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/integration/kvd_server_process.h"
#include "tests/support/redis_server.h"
#include "tests/support/source_dir.h"

namespace kvd::testing {
namespace {

using json = nlohmann::json;

const std::string kModel = kvd::test_support::SourceDir() + "/models/kvd-tiny";

class SharedTierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (RedisServer::Binary().empty()) {
      GTEST_SKIP() << "redis-server is not installed (scripts/bootstrap installs it)";
    }
    ASSERT_TRUE(redis_.Start());
    dir_ = std::filesystem::temp_directory_path() /
           ("kvd_shared_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    replicas_.clear();
    std::filesystem::remove_all(dir_);
  }

  // Starts replica `name` on its own data directory, named `name` in its ids, waiting up to
  // `redis_timeout_seconds` for each Redis round trip.
  KvdServer& Start(const std::string& name, int redis_timeout_seconds = 1) {
    const std::filesystem::path config = dir_ / (name + ".yaml");
    std::ofstream(config) << "store:\n  replica: " << name
                          << "\n  remote:\n    url: " << redis_.url()
                          << "\n    timeout_seconds: " << redis_timeout_seconds << "\n";
    auto server = std::make_unique<KvdServer>(std::vector<std::string>{
        "--model", kModel, "--config", config.string(), "--data-dir", (dir_ / name).string()});
    EXPECT_GT(server->port(), 0) << server->logs();
    replicas_[name] = std::move(server);
    return *replicas_[name];
  }

  static HttpResult Upload(KvdServer& server, const std::string& text) {
    return Curl("POST", server.url("/v1/documents"), json{{"text", text}}.dump());
  }

  // The greedy continuation of a question on document `id`.
  static HttpResult Ask(KvdServer& server, const std::string& id) {
    return Curl("POST", server.url("/v1/completions"),
                json{{"model", "kvd-tiny"},
                     {"documents", {id}},
                     {"prompt", " Question: where is the vault? Answer:"},
                     {"max_tokens", 12},
                     {"temperature", 0}}
                    .dump());
  }

  static std::string TextOf(const HttpResult& result) {
    return json::parse(result.body)["choices"][0]["text"].get<std::string>();
  }

  RedisServer redis_;
  std::filesystem::path dir_;
  std::map<std::string, std::unique_ptr<KvdServer>> replicas_;
};

TEST_F(SharedTierTest, AnyReplicaAnswersAnyDocumentAndADeleteIsSeenByAll) {
  KvdServer& a = Start("a");
  KvdServer& b = Start("b");
  KvdServer& c = Start("c");
  const HttpResult upload =
      Upload(a, "The vault of the northern bank is in Tromso, behind the fish market. Its code "
                "is 4417 and only the night guard, Ingrid, knows it.");
  ASSERT_EQ(upload.status, 201) << upload.body;
  const std::string id = json::parse(upload.body)["id"];
  ASSERT_NE(id.find("doc-a-"), std::string::npos);

  const HttpResult on_a = Ask(a, id);
  ASSERT_EQ(on_a.status, 200) << on_a.body;
  // No routing header: with a shared tier, another replica's id is not misdirected.
  for (KvdServer* replica : {&b, &c}) {
    const HttpResult answer = Ask(*replica, id);
    ASSERT_EQ(answer.status, 200) << answer.body;
    EXPECT_EQ(TextOf(answer), TextOf(on_a));
    const HttpResult get = Curl("GET", replica->url("/v1/documents/" + id));
    ASSERT_EQ(get.status, 200) << get.body;
    EXPECT_EQ(json::parse(get.body)["status"], "ready");
  }
  const HttpResult list = Curl("GET", c.url("/v1/documents"));
  ASSERT_EQ(list.status, 200) << list.body;
  ASSERT_EQ(json::parse(list.body)["data"].size(), 1u);
  EXPECT_EQ(json::parse(list.body)["data"][0]["id"], id);

  // B holds a copy now; a delete on C removes it everywhere.
  ASSERT_EQ(Curl("DELETE", c.url("/v1/documents/" + id)).status, 200);
  for (KvdServer* replica : {&a, &b, &c}) {
    EXPECT_EQ(Curl("GET", replica->url("/v1/documents/" + id)).status, 404);
    EXPECT_EQ(Ask(*replica, id).status, 404);
  }
  EXPECT_EQ(Curl("DELETE", b.url("/v1/documents/" + id)).status, 404);
}

// A stored response is the shared tier's: another replica reads it, continues its conversation
// and lists its input, and a delete on any replica is seen by all.
TEST_F(SharedTierTest, AnyReplicaContinuesAnyStoredResponse) {
  KvdServer& a = Start("a");
  KvdServer& b = Start("b");
  const HttpResult first = Curl("POST", a.url("/v1/responses"),
                                json{{"model", "kvd-tiny"},
                                     {"input", "Q:vig"},
                                     {"temperature", 0},
                                     {"max_output_tokens", 8}}
                                    .dump());
  ASSERT_EQ(first.status, 200) << first.body;
  const json response = json::parse(first.body);
  const std::string id = response["id"];
  const HttpResult read = Curl("GET", b.url("/v1/responses/" + id));
  ASSERT_EQ(read.status, 200) << read.body;
  EXPECT_EQ(json::parse(read.body), response);
  // Streamed: the last event comes after the response is in Redis.
  const HttpResult next = Curl("POST", b.url("/v1/responses"),
                               json{{"model", "kvd-tiny"},
                                    {"previous_response_id", id},
                                    {"input", "Q:vox"},
                                    {"stream", true},
                                    {"max_output_tokens", 8}}
                                   .dump());
  ASSERT_EQ(next.status, 200) << next.body;
  const size_t last = next.body.rfind("data: ");
  ASSERT_NE(last, std::string::npos) << next.body;
  const json done = json::parse(next.body.substr(last + 6), nullptr, false);
  ASSERT_TRUE(done.is_object()) << next.body;
  const std::string next_id = done["response"]["id"];
  const HttpResult items =
      Curl("GET", a.url("/v1/responses/" + next_id + "/input_items?order=asc"));
  ASSERT_EQ(items.status, 200) << items.body;
  EXPECT_EQ(json::parse(items.body)["data"].size(), 3u) << items.body;

  EXPECT_EQ(Curl("DELETE", a.url("/v1/responses/" + id)).status, 200);
  EXPECT_EQ(Curl("GET", b.url("/v1/responses/" + id)).status, 404);
  EXPECT_NE(b.logs().find("responses: stored in the shared tier"), std::string::npos);
  // B read the first response twice and the deleted one once: its metrics count the reads.
  const HttpResult metrics = Curl("GET", b.url("/metrics"));
  ASSERT_EQ(metrics.status, 200);
  std::istringstream lines(metrics.body);
  std::optional<double> reads;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("kvd_response_store_remote_requests_total{") &&
        line.find("op=\"read\"") != std::string::npos) {
      reads = std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  EXPECT_EQ(reads, 3.0) << metrics.body;
}

// A response continuing a stored one reads its conversation from Redis on a worker; a SIGTERM
// that comes while that read waits is drained like any reply in flight: the response is answered
// whole and stored, and the server exits cleanly.
TEST_F(SharedTierTest, ADrainWaitsForAResponseStillReadingItsConversation) {
  KvdServer& a = Start("a", /*redis_timeout_seconds=*/10);
  const HttpResult first = Curl(
      "POST", a.url("/v1/responses"),
      json{{"model", "kvd-tiny"}, {"input", "Q:vig"}, {"temperature", 0}, {"max_output_tokens", 4}}
          .dump());
  ASSERT_EQ(first.status, 200) << first.body;
  const std::string id = json::parse(first.body)["id"];

  redis_.Pause();
  HttpResult next;
  std::thread client([&] {
    next = Curl("POST", a.url("/v1/responses"),
                json{{"model", "kvd-tiny"},
                     {"previous_response_id", id},
                     {"input", "Q:vox"},
                     {"max_output_tokens", 4}}
                    .dump());
  });
  // The request is read and waiting on the paused Redis long before this; the signal comes while
  // it waits, and Redis answers again well within the replica's timeout.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  kill(a.pid(), SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  redis_.Resume();
  client.join();
  EXPECT_EQ(next.status, 200) << next.body << a.logs();
  EXPECT_EQ(a.Stop(), 0) << a.logs();
}

TEST_F(SharedTierTest, AReplicaKilledWhileUploadingLosesNothingItAcknowledged) {
  KvdServer& a = Start("a");
  KvdServer& b = Start("b");
  std::mutex mu;
  std::condition_variable acknowledged_one;
  std::vector<std::string> acknowledged;
  std::atomic<bool> stop = false;
  std::vector<std::thread> uploaders;
  for (int u = 0; u < 2; ++u) {
    uploaders.emplace_back([&, u] {
      for (int i = 0; !stop; ++i) {
        const HttpResult result = Upload(a, "Ledger " + std::to_string(u) + "-" +
                                                std::to_string(i) +
                                                ": the ferry to Bodo leaves at nine.");
        if (result.status != 201) continue;  // the kill cut it short
        {
          std::lock_guard lock(mu);
          acknowledged.push_back(json::parse(result.body)["id"]);
        }
        acknowledged_one.notify_all();
      }
    });
  }
  // Kill once a few uploads are acknowledged, with more in flight.
  {
    std::unique_lock lock(mu);
    acknowledged_one.wait_for(lock, std::chrono::seconds(60),
                              [&] { return acknowledged.size() >= 4; });
  }
  EXPECT_EQ(a.Stop(SIGKILL), 128 + SIGKILL);
  stop = true;
  for (std::thread& uploader : uploaders) uploader.join();
  ASSERT_GE(acknowledged.size(), 4u);
  for (const std::string& id : acknowledged) {
    const HttpResult answer = Ask(b, id);
    EXPECT_EQ(answer.status, 200) << id << ": " << answer.body;
  }
  // The killed replica comes back and answers them too.
  KvdServer& again = Start("a");
  for (const std::string& id : acknowledged) EXPECT_EQ(Ask(again, id).status, 200) << id;
}

TEST_F(SharedTierTest, WithoutRedisWritesAre503AndLocalCopiesStillAnswerUntilItIsBack) {
  KvdServer& a = Start("a");
  KvdServer& b = Start("b");
  const HttpResult first = Upload(a, "The lighthouse keeper of Lindesnes is called Arne.");
  ASSERT_EQ(first.status, 201) << first.body;
  const std::string id = json::parse(first.body)["id"];
  const HttpResult before = Ask(b, id);  // B keeps a copy
  ASSERT_EQ(before.status, 200) << before.body;

  redis_.Stop(SIGKILL);
  HttpResult refused = Upload(a, "Nothing of this may be half written.");
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_EQ(refused.headers["retry-after"], "1");
  EXPECT_EQ(json::parse(refused.body)["error"]["code"], "shared_tier_unavailable");
  EXPECT_EQ(Curl("DELETE", a.url("/v1/documents/" + id)).status, 503);
  for (KvdServer* replica : {&a, &b}) {
    const HttpResult answer = Ask(*replica, id);
    ASSERT_EQ(answer.status, 200) << answer.body;
    EXPECT_EQ(TextOf(answer), TextOf(before));
  }

  // Back, with what it had acknowledged: the replicas reconnect by themselves.
  ASSERT_TRUE(redis_.Start());
  const HttpResult second = Upload(a, "The ferry to Bodo leaves at nine.");
  ASSERT_EQ(second.status, 201) << second.body;
  const std::string second_id = json::parse(second.body)["id"];
  EXPECT_EQ(Ask(b, second_id).status, 200);
  EXPECT_EQ(Ask(b, id).status, 200);
  ASSERT_EQ(Curl("DELETE", b.url("/v1/documents/" + id)).status, 200);
  EXPECT_EQ(Ask(a, id).status, 404);
}

}  // namespace
}  // namespace kvd::testing
