// Prefix caching through `kvd serve` over real HTTP (curl): cached tokens in the usage, and a
// router's view of the cache, rebuilt from GET /v1/kv_events alone, agreeing with the server's
// own count while blocks are stored and evicted.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "nlohmann/json.hpp"
#include "tests/integration/kvd_server_process.h"

namespace kvd::testing {
namespace {

using json = nlohmann::json;

const std::string kModel = std::string(KVD_SOURCE_DIR) + "/models/kvd-tiny";
constexpr int kPoolBlocksPerTokenBlock = 4 * 2;  // the bundled model's layers x kv heads

// A `name{...} value` sample of a Prometheus scrape.
double MetricValue(const std::string& scrape, const std::string& name) {
  std::istringstream lines(scrape);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + "{", 0) == 0) return std::stod(line.substr(line.rfind(' ') + 1));
  }
  ADD_FAILURE() << name << " is not in the scrape";
  return -1;
}

// The `data:` batches of an SSE body, with their `id:`s ("EPOCH-N").
std::vector<std::pair<std::string, json>> Batches(const std::string& body) {
  std::vector<std::pair<std::string, json>> batches;
  std::istringstream lines(body);
  std::string id;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("id: ", 0) == 0) id = line.substr(4);
    // A line cut short by the end of the capture is not a batch yet.
    if (line.rfind("data: ", 0) == 0 && !lines.eof()) {
      batches.emplace_back(id, json::parse(line.substr(6)));
    }
  }
  return batches;
}

// A follower of the server's KV events: curl in the background, its stream in a file.
class Follower {
 public:
  Follower(const std::string& url, const std::filesystem::path& dir)
      : events_(dir / "events"), headers_(dir / "headers") {
    pid_ = std::stoi(Shell("curl -s -N -D " + headers_.string() + " '" + url + "' > " +
                           events_.string() + " 2>/dev/null & echo $!"));
  }
  ~Follower() { Shell("kill " + std::to_string(pid_) + " 2>/dev/null"); }

  // Waits (bounded) until the stream has begun, or until it holds the batch with id `id`.
  bool WaitConnected() const { return WaitFor(headers_, "200"); }
  bool WaitForBatch(const std::string& id) const { return WaitFor(events_, "id: " + id + "\n"); }
  std::string events() const { return ReadFile(events_); }

 private:
  static bool WaitFor(const std::filesystem::path& file, const std::string& text) {
    for (int i = 0; i < 300; ++i) {
      if (ReadFile(file).find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  std::filesystem::path events_, headers_;
  int pid_ = 0;
};

// A router's index: the hashes of the cached blocks, from the events.
struct RouterIndex {
  std::set<std::string> blocks;
  int64_t removed = 0;

  void Apply(const json& batch) {
    for (const json& event : batch.at("events")) {
      const std::string type = event.at("type");
      if (type == "AllBlocksCleared") {
        blocks.clear();
        continue;
      }
      for (const json& hash : event.at("block_hashes")) {
        if (type == "BlockStored") {
          EXPECT_EQ(event.at("token_ids").size(), 16u);
          EXPECT_EQ(event.at("block_size"), 16);
          EXPECT_EQ(event.at("medium"), "CPU");
          blocks.insert(hash.get<std::string>());
        } else {
          ASSERT_EQ(type, "BlockRemoved");
          EXPECT_EQ(blocks.erase(hash.get<std::string>()), 1u);
          ++removed;
        }
      }
    }
  }
};

class PrefixCacheServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("kvd_prefix_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    // A small pool, half of which the cache may keep: cached blocks are evicted as it goes.
    std::ofstream(dir_ / "config.yaml") << "scheduler:\n  kv_cache_bytes: 2MB\n"
                                           "prefix_cache:\n  kv_events: true\n"
                                           "  max_pool_fraction: 0.5\n";
    server_ = std::make_unique<KvdServer>(std::vector<std::string>{
        "--model", kModel, "--config", (dir_ / "config.yaml").string()});
    ASSERT_GT(server_->port(), 0) << server_->logs();
  }
  void TearDown() override {
    EXPECT_EQ(server_->Stop(SIGTERM), 0) << server_->logs();
    std::filesystem::remove_all(dir_);
  }

  std::filesystem::path dir_;
  std::unique_ptr<KvdServer> server_;
};

TEST_F(PrefixCacheServeTest, ARouterFollowingTheEventsAgreesWithTheServer) {
  Follower follower(server_->url("/v1/kv_events"), dir_);
  ASSERT_TRUE(follower.WaitConnected());

  // Three long system texts in turn: more blocks than the cache may keep.
  std::vector<std::string> systems;
  for (const char* sentence : {" the old river runs past the mill and the mill wheel turns",
                               " every morning the baker opens the shop before dawn",
                               " the lighthouse keeper counts the ships that pass at night"}) {
    std::string text;
    for (int repeat = 0; repeat < 8; ++repeat) text += sentence;
    systems.push_back(text);
  }
  int32_t cached = 0;
  for (int i = 0; i < 12; ++i) {
    const json body = {{"model", "kvd-tiny"},
                       {"prompt", systems[i % 3] + " question " + std::to_string(i)},
                       {"max_tokens", 4}};
    const HttpResult result = Curl("POST", server_->url("/v1/completions"), body.dump());
    ASSERT_EQ(result.status, 200) << result.body;
    const json usage = json::parse(result.body).at("usage");
    if (i >= 3) {
      // The three prompts rotate: each later one finds its system text cached (or, after an
      // eviction, part of it).
      cached += usage.value("/prompt_tokens_details/cached_tokens"_json_pointer, 0);
    }
  }
  EXPECT_GT(cached, 0);

  // A follower that starts now gets one batch: a snapshot, numbered as the latest.
  const HttpResult snapshot =
      Curl("GET", server_->url("/v1/kv_events?after=0"), "", "--max-time 1");
  EXPECT_EQ(snapshot.headers.at("content-type"), "text/event-stream; charset=utf-8");
  const auto snapshot_batches = Batches(snapshot.body);
  ASSERT_EQ(snapshot_batches.size(), 1u) << snapshot.body;
  const std::string latest = snapshot_batches[0].first;

  // The live follower, once it has that batch, agrees with the server.
  ASSERT_TRUE(follower.WaitForBatch(latest)) << follower.events();
  RouterIndex router;
  uint64_t expected = 0;
  for (const auto& [id, batch] : Batches(follower.events())) {
    EXPECT_EQ(batch.at("seq"), ++expected) << "batches are numbered from 1 without gaps";
    EXPECT_EQ(id.substr(id.find('-') + 1), std::to_string(expected));
    router.Apply(batch);
  }
  EXPECT_EQ(latest.substr(latest.find('-') + 1), std::to_string(expected));
  EXPECT_GT(router.removed, 0) << "the small pool should have evicted blocks";
  const std::string scrape = Curl("GET", server_->url("/metrics")).body;
  EXPECT_EQ(static_cast<double>(router.blocks.size() * kPoolBlocksPerTokenBlock),
            MetricValue(scrape, "kvd_prefix_cache_blocks"));
  EXPECT_GT(MetricValue(scrape, "vllm:prefix_cache_hits_total"), 0);

  // The snapshot holds the same blocks; a follower that has seen every batch gets nothing more.
  RouterIndex late;
  late.Apply(snapshot_batches[0].second);
  EXPECT_EQ(late.blocks, router.blocks);
  const HttpResult resumed = Curl("GET", server_->url("/v1/kv_events"), "",
                                  "--max-time 1 -H 'Last-Event-ID: " + latest + "'");
  EXPECT_TRUE(Batches(resumed.body).empty()) << resumed.body;

  for (const char* query : {"?after=x", "?after=3", "?since=3"}) {
    const HttpResult bad = Curl("GET", server_->url(std::string("/v1/kv_events") + query));
    EXPECT_EQ(bad.status, 400) << query;
    EXPECT_EQ(json::parse(bad.body)["error"]["type"], "invalid_request_error") << bad.body;
  }
}

}  // namespace
}  // namespace kvd::testing
