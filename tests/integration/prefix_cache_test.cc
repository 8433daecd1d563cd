// Prefix caching through `kvd serve` over real HTTP (curl): cached tokens in the usage, and a
// router's view of the cache, rebuilt from GET /v1/kv_events alone, agreeing with the server's
// own count while blocks are stored and evicted, and with the same events in vLLM's transport
// (ZeroMQ, msgpack), which kvd publishes to a subscriber that binds and replays on request.
#include <gtest/gtest.h>
#include <zmq.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "nlohmann/json.hpp"
#include "tests/integration/kvd_server_process.h"
#include "tests/support/free_port.h"
#include "tests/support/msgpack_value.h"
#include "tests/support/source_dir.h"

namespace kvd::testing {
namespace {

using json = nlohmann::json;

const std::string kModel = kvd::test_support::SourceDir() + "/models/kvd-tiny";
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

// The integer form of a hex block key in vLLM's events: its last 8 bytes, big-endian.
uint64_t VllmHash(const std::string& hex) { return std::stoull(hex.substr(48), nullptr, 16); }

std::string BigEndian8(uint64_t value) {
  std::string bytes(8, '\0');
  for (int i = 7; i >= 0; --i, value >>= 8) bytes[i] = static_cast<char>(value & 0xff);
  return bytes;
}

uint64_t ReadBigEndian8(const std::string& bytes) {
  uint64_t value = 0;
  for (const char byte : bytes) value = value << 8 | static_cast<uint8_t>(byte);
  return value;
}

// One whole message from `socket`, or nothing within `timeout_ms`.
std::vector<std::string> ReceiveMessage(void* socket, int timeout_ms) {
  zmq_pollitem_t item{.socket = socket, .fd = 0, .events = ZMQ_POLLIN, .revents = 0};
  std::vector<std::string> frames;
  if (zmq_poll(&item, 1, timeout_ms) <= 0) return frames;
  for (bool more = true; more;) {
    zmq_msg_t message;
    zmq_msg_init(&message);
    if (zmq_msg_recv(&message, socket, 0) < 0) break;
    frames.emplace_back(static_cast<const char*>(zmq_msg_data(&message)), zmq_msg_size(&message));
    more = zmq_msg_more(&message) != 0;
    zmq_msg_close(&message);
  }
  return frames;
}

// A router's index over vLLM's msgpack batches: the integer hashes of the cached blocks.
void ApplyVllmBatch(const std::string& payload, std::set<uint64_t>& blocks) {
  const std::optional<MsgpackValue> batch = MsgpackDecoder::Decode(payload);
  ASSERT_TRUE(batch.has_value());
  ASSERT_EQ(batch->items.size(), 2u);
  for (const MsgpackValue& event : batch->items[1].items) {
    const std::string& type = event.items.at(0).text;
    if (type == "AllBlocksCleared") {
      blocks.clear();
    } else if (type == "BlockStored") {
      EXPECT_EQ(event.items.at(3).items.size(), 16u);
      EXPECT_EQ(event.items.at(6).text, "CPU");
      blocks.insert(event.items.at(1).items.at(0).uint);
    } else {
      ASSERT_EQ(type, "BlockRemoved");
      for (const MsgpackValue& hash : event.items.at(1).items) {
        EXPECT_EQ(blocks.erase(hash.uint), 1u);
      }
    }
  }
}

constexpr std::string_view kTopic = "kv@127.0.0.1@kvd-tiny";

class PrefixCacheServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("kvd_prefix_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    // The subscriber binds and kvd connects to it, as in llm-d's centralized mode. It binds
    // once kvd runs (kvd reconnects until it can), so that kvd inherits none of its sockets.
    const std::string subscriber_endpoint =
        "tcp://127.0.0.1:" + std::to_string(FreeLoopbackPort());
    replay_endpoint_ = "tcp://127.0.0.1:" + std::to_string(FreeLoopbackPort());
    // A small pool, half of which the cache may keep: cached blocks are evicted as it goes.
    std::ofstream(dir_ / "config.yaml")
        << "scheduler:\n  kv_cache_bytes: 2MB\n"
           "prefix_cache:\n  kv_events: true\n  max_pool_fraction: 0.5\n"
           "  kv_events_endpoint: \"" << subscriber_endpoint << "\"\n"
           "  kv_events_replay_endpoint: \"" << replay_endpoint_ << "\"\n";
    server_ = std::make_unique<KvdServer>(
        std::vector<std::string>{"--model", kModel, "--config", (dir_ / "config.yaml").string(),
                                 "--kv-events-topic", std::string(kTopic)});
    ASSERT_GT(server_->port(), 0) << server_->logs();
    zmq_ = zmq_ctx_new();
    subscriber_ = zmq_socket(zmq_, ZMQ_SUB);
    const int linger = 0;
    zmq_setsockopt(subscriber_, ZMQ_LINGER, &linger, sizeof linger);
    ASSERT_EQ(zmq_setsockopt(subscriber_, ZMQ_SUBSCRIBE, "kv@", 3), 0);
    // Batches published before kvd's connection is up are lost, as for any subscriber: wait for
    // it (kvd publishes nothing before the first request).
    ASSERT_EQ(zmq_socket_monitor(subscriber_, "inproc://subscriber-events",
                                 ZMQ_EVENT_HANDSHAKE_SUCCEEDED),
              0);
    void* monitor = zmq_socket(zmq_, ZMQ_PAIR);
    ASSERT_EQ(zmq_connect(monitor, "inproc://subscriber-events"), 0);
    ASSERT_EQ(zmq_bind(subscriber_, subscriber_endpoint.c_str()), 0);
    EXPECT_FALSE(ReceiveMessage(monitor, 10000).empty()) << "kvd never connected";
    zmq_socket_monitor(subscriber_, nullptr, 0);
    zmq_close(monitor);
    // The socket takes the connection on, and sends its subscription, when it is next used.
    EXPECT_TRUE(ReceiveMessage(subscriber_, 0).empty());
  }
  void TearDown() override {
    EXPECT_EQ(server_->Stop(SIGTERM), 0) << server_->logs();
    zmq_close(subscriber_);
    zmq_ctx_term(zmq_);
    std::filesystem::remove_all(dir_);
  }

  std::filesystem::path dir_;
  void* zmq_ = nullptr;
  void* subscriber_ = nullptr;
  std::string replay_endpoint_;
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

  // The same events in vLLM's transport: the live stream, numbered without gaps up to the
  // latest, and a replay from batch 0 (a snapshot), each agreeing with the SSE follower.
  std::set<uint64_t> router_hashes;
  for (const std::string& hex : router.blocks) router_hashes.insert(VllmHash(hex));
  const uint64_t latest_number = std::stoull(latest.substr(latest.find('-') + 1));
  void* peer = zmq_socket(zmq_, ZMQ_DEALER);
  const int linger = 0;
  zmq_setsockopt(peer, ZMQ_LINGER, &linger, sizeof linger);
  ASSERT_EQ(zmq_connect(peer, replay_endpoint_.c_str()), 0);
  // Asks for the batches from `first` on; applies them to `index` and returns their numbers.
  auto replay = [&](uint64_t first, std::set<uint64_t>& index) {
    const std::string number = BigEndian8(first);
    zmq_send(peer, "", 0, ZMQ_SNDMORE);
    zmq_send(peer, number.data(), number.size(), 0);
    std::vector<uint64_t> numbers;
    for (std::vector<std::string> reply = ReceiveMessage(peer, 5000); reply.size() == 3;
         reply = ReceiveMessage(peer, 5000)) {
      if (reply[2].empty()) {
        EXPECT_EQ(reply[1], std::string(8, '\xff'));
        return numbers;
      }
      numbers.push_back(ReadBigEndian8(reply[1]));
      ApplyVllmBatch(reply[2], index);
    }
    ADD_FAILURE() << "no end of replay";
    return numbers;
  };
  // Live: numbered without gaps up to the latest. Batches sent before the subscription reached
  // kvd are lost to a subscriber; it then starts from a replay's snapshot instead, as a router
  // built for vLLM does.
  std::set<uint64_t> live;
  uint64_t last_live = 0;
  while (last_live < latest_number) {
    const std::vector<std::string> message = ReceiveMessage(subscriber_, 5000);
    ASSERT_EQ(message.size(), 3u) << "batch " << last_live + 1 << " never came";
    EXPECT_EQ(message[0], kTopic);
    const uint64_t number = ReadBigEndian8(message[1]);
    if (last_live == 0 && number != 1) {
      const std::vector<uint64_t> snapshot = replay(1, live);
      ASSERT_EQ(snapshot.size(), 1u);
      last_live = snapshot[0];
      continue;
    }
    if (number <= last_live) continue;  // in the snapshot already
    EXPECT_EQ(number, last_live + 1);
    last_live = number;
    ApplyVllmBatch(message[2], live);
  }
  EXPECT_EQ(live, router_hashes);
  // A replay from batch 0 is one snapshot, numbered as the latest.
  std::set<uint64_t> replayed;
  EXPECT_EQ(replay(0, replayed), std::vector<uint64_t>{latest_number});
  EXPECT_EQ(replayed, router_hashes);
  zmq_close(peer);

  for (const char* query : {"?after=x", "?after=3", "?since=3"}) {
    const HttpResult bad = Curl("GET", server_->url(std::string("/v1/kv_events") + query));
    EXPECT_EQ(bad.status, 400) << query;
    EXPECT_EQ(json::parse(bad.body)["error"]["type"], "invalid_request_error") << bad.body;
  }
}

}  // namespace
}  // namespace kvd::testing
