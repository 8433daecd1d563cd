// KV events in vLLM's transport: a ZeroMQ subscriber and a replaying peer rebuild the block
// index from the published msgpack batches and agree with the log; bad endpoints fail to start
// with the endpoint named; a peer's malformed replay requests are dropped.
#include <gtest/gtest.h>
#include <zmq.h>

#include <array>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/sha256.h"
#include "server/kv_events/vllm_kv_events.h"
#include "server/kv_events/zmq_publisher.h"
#include "tests/support/msgpack_value.h"

namespace kvd::server {
namespace {

using scheduler::KvEvent;
using scheduler::KvEventLog;
using testing::MsgpackDecoder;
using testing::MsgpackValue;
using Type = MsgpackValue::Type;

constexpr int32_t kBlockSize = 4;
constexpr std::string_view kTopic = "kv@10.0.0.7@kvd-tiny";

std::string Key(int i) { return base::Sha256Hex(std::to_string(i)); }

KvEvent Stored(int i, int parent) {
  return {.kind = KvEvent::Kind::kBlockStored,
          .block_hashes = {Key(i)},
          .parent_block_hash = parent < 0 ? "" : Key(parent),
          .token_ids = {i, i + 1, i + 2, i + 3}};
}

KvEvent Removed(std::vector<int> blocks) {
  KvEvent event{.kind = KvEvent::Kind::kBlockRemoved};
  for (const int i : blocks) event.block_hashes.push_back(Key(i));
  return event;
}

// A test-side socket, closed with the test.
class Socket {
 public:
  Socket(void* context, int type) : socket_(zmq_socket(context, type)) {
    const int linger = 0;
    zmq_setsockopt(socket_, ZMQ_LINGER, &linger, sizeof linger);
  }
  ~Socket() { zmq_close(socket_); }
  void* get() const { return socket_; }

  void Send(const std::vector<std::string>& frames) {
    for (size_t i = 0; i < frames.size(); ++i) {
      ASSERT_GE(zmq_send(socket_, frames[i].data(), frames[i].size(),
                         i + 1 < frames.size() ? ZMQ_SNDMORE : 0),
                0);
    }
  }
  // One whole message, or null when none comes within `timeout_ms`.
  std::optional<std::vector<std::string>> Receive(int timeout_ms) {
    zmq_pollitem_t item{.socket = socket_, .fd = 0, .events = ZMQ_POLLIN, .revents = 0};
    if (zmq_poll(&item, 1, timeout_ms) <= 0) return std::nullopt;
    std::vector<std::string> frames;
    for (bool more = true; more;) {
      zmq_msg_t message;
      zmq_msg_init(&message);
      EXPECT_GE(zmq_msg_recv(&message, socket_, 0), 0);
      frames.emplace_back(static_cast<const char*>(zmq_msg_data(&message)),
                          zmq_msg_size(&message));
      more = zmq_msg_more(&message) != 0;
      zmq_msg_close(&message);
    }
    return frames;
  }

 private:
  void* socket_;
};

uint64_t BatchNumber(const std::string& frame) {
  EXPECT_EQ(frame.size(), 8u);
  uint64_t value = 0;
  for (const char byte : frame) value = value << 8 | static_cast<uint8_t>(byte);
  return value;
}

std::string BigEndian8(uint64_t value) {
  std::string bytes(8, '\0');
  for (int i = 7; i >= 0; --i, value >>= 8) bytes[i] = static_cast<char>(value & 0xff);
  return bytes;
}

// What a router built for vLLM keeps: block hash -> its tokens.
class BlockIndex {
 public:
  // Applies one msgpack KVEventBatch, checking every event's shape.
  void Apply(const std::string& payload) {
    const std::optional<MsgpackValue> batch = MsgpackDecoder::Decode(payload);
    ASSERT_TRUE(batch.has_value());
    ASSERT_EQ(batch->type, Type::kArray);
    ASSERT_EQ(batch->items.size(), 2u);  // [ts, events]
    EXPECT_EQ(batch->items[0].type, Type::kDouble);
    ASSERT_EQ(batch->items[1].type, Type::kArray);
    for (const MsgpackValue& event : batch->items[1].items) {
      ASSERT_EQ(event.type, Type::kArray);
      ASSERT_FALSE(event.items.empty());
      const std::string& tag = event.items[0].text;
      if (tag == "BlockStored") {
        ASSERT_EQ(event.items.size(), 8u);
        ASSERT_EQ(event.items[1].items.size(), 1u);
        const uint64_t hash = event.items[1].items[0].uint;
        const MsgpackValue& parent = event.items[2];
        if (parent.type != Type::kNil) {
          EXPECT_TRUE(blocks_.contains(parent.uint)) << "a parent is stored before its child";
        }
        std::vector<int32_t> tokens;
        for (const MsgpackValue& token : event.items[3].items) {
          tokens.push_back(static_cast<int32_t>(token.uint));
        }
        EXPECT_EQ(tokens.size(), static_cast<size_t>(kBlockSize));
        EXPECT_EQ(event.items[4].uint, static_cast<uint64_t>(kBlockSize));
        EXPECT_EQ(event.items[5].type, Type::kNil);  // lora_id
        EXPECT_EQ(event.items[6].text, "CPU");
        EXPECT_EQ(event.items[7].type, Type::kNil);  // lora_name
        blocks_[hash] = tokens;
      } else if (tag == "BlockRemoved") {
        ASSERT_EQ(event.items.size(), 3u);
        for (const MsgpackValue& hash : event.items[1].items) {
          EXPECT_EQ(blocks_.erase(hash.uint), 1u) << "removed without being stored";
        }
        EXPECT_EQ(event.items[2].text, "CPU");
      } else {
        ASSERT_EQ(tag, "AllBlocksCleared");
        EXPECT_EQ(event.items.size(), 1u);
        blocks_.clear();
      }
    }
  }
  const std::map<uint64_t, std::vector<int32_t>>& blocks() const { return blocks_; }

 private:
  std::map<uint64_t, std::vector<int32_t>> blocks_;
};

class ZmqKvEventsTest : public ::testing::Test {
 protected:
  ZmqKvEventsTest() : context_(zmq_ctx_new()) {}
  ~ZmqKvEventsTest() override {
    publisher_.reset();
    zmq_ctx_term(context_);
  }

  void StartPublisher() {
    auto started = ZmqKvEventPublisher::Start(log_, {.endpoint = "tcp://127.0.0.1:*",
                                                     .replay_endpoint = "tcp://127.0.0.1:*",
                                                     .topic = std::string(kTopic)});
    ASSERT_TRUE(started.ok()) << started.status();
    publisher_ = *std::move(started);
    EXPECT_TRUE(publisher_->endpoint().starts_with("tcp://127.0.0.1:"));
    EXPECT_NE(publisher_->endpoint(), "tcp://127.0.0.1:*");
  }

  // Asks the replay socket for every batch from `first` on; applies them to `index` (when not
  // null) and returns their numbers.
  std::vector<uint64_t> Replay(Socket& peer, uint64_t first, BlockIndex* index) {
    peer.Send({"", BigEndian8(first)});
    std::vector<uint64_t> numbers;
    while (true) {
      std::optional<std::vector<std::string>> reply = peer.Receive(5000);
      if (!reply.has_value()) {
        ADD_FAILURE() << "no end of replay";
        return numbers;
      }
      EXPECT_EQ(reply->size(), 3u);  // [empty, number, batch]
      if (reply->size() != 3) return numbers;
      if ((*reply)[2].empty()) {
        EXPECT_EQ((*reply)[1], std::string(8, '\xff'));
        return numbers;
      }
      numbers.push_back(BatchNumber((*reply)[1]));
      if (index != nullptr) index->Apply((*reply)[2]);
    }
  }

  KvEventLog log_{kBlockSize, 1000};
  void* context_;
  std::unique_ptr<ZmqKvEventPublisher> publisher_;
};

TEST_F(ZmqKvEventsTest, ASubscriberAndAReplayRebuildTheBlockIndex) {
  StartPublisher();
  log_.Append(1.0, {Stored(0, -1), Stored(1, 0)});
  log_.Append(2.0, {Removed({1})});

  Socket subscriber(context_, ZMQ_SUB);
  ASSERT_EQ(zmq_setsockopt(subscriber.get(), ZMQ_SUBSCRIBE, "kv@", 3), 0);
  ASSERT_EQ(zmq_connect(subscriber.get(), publisher_->endpoint().c_str()), 0);
  // A subscription takes a moment to reach the publisher: until one batch arrives, what it
  // sends is lost, as with any ZeroMQ subscriber; the replay fills the gap.
  BlockIndex index;
  std::optional<std::vector<std::string>> first;
  for (int i = 2; i < 200 && !first; ++i) {
    log_.Append(i + 1.0, {Stored(i, 0)});
    first = subscriber.Receive(50);
  }
  ASSERT_TRUE(first.has_value());
  ASSERT_EQ(first->size(), 3u);
  EXPECT_EQ((*first)[0], kTopic);
  const uint64_t first_live = BatchNumber((*first)[1]);

  Socket peer(context_, ZMQ_DEALER);
  ASSERT_EQ(zmq_connect(peer.get(), publisher_->replay_endpoint().c_str()), 0);
  // From the first batch, the replay is one snapshot of the whole state, numbered as the latest.
  const std::vector<uint64_t> replayed = Replay(peer, 1, &index);
  ASSERT_EQ(replayed.size(), 1u);
  EXPECT_GE(replayed[0], first_live);
  uint64_t seen = replayed[0];

  // Live from here on: every batch arrives, numbered one after the other.
  log_.Append(500.0, {Removed({2}), Stored(1000, -1)});
  log_.Append(501.0, {Stored(1001, 1000)});
  while (seen < log_.latest()) {
    std::optional<std::vector<std::string>> message = subscriber.Receive(5000);
    ASSERT_TRUE(message.has_value()) << "batch " << seen + 1 << " never came";
    const uint64_t number = BatchNumber((*message)[1]);
    if (number <= seen) continue;  // sent before the replay's end
    EXPECT_EQ(number, seen + 1);
    index.Apply((*message)[2]);
    seen = number;
  }
  EXPECT_EQ(index.blocks().size(), log_.cached_blocks());
  EXPECT_TRUE(index.blocks().contains(VllmBlockHash(Key(1001))));
  EXPECT_EQ(index.blocks().at(VllmBlockHash(Key(1001))),
            (std::vector<int32_t>{1001, 1002, 1003, 1004}));
  EXPECT_FALSE(index.blocks().contains(VllmBlockHash(Key(2))));

  // From a batch the log holds: the batches themselves.
  const uint64_t latest = log_.latest();
  EXPECT_EQ(Replay(peer, latest - 1, nullptr), (std::vector<uint64_t>{latest - 1, latest}));
  // From batch 0 (or one the log no longer holds): one snapshot, from AllBlocksCleared.
  BlockIndex fresh;
  fresh.Apply(EncodeVllmKvEventBatch({.events = {Stored(77, -1)}}, kBlockSize, "CPU"));
  EXPECT_EQ(Replay(peer, 0, &fresh), std::vector<uint64_t>{latest});
  EXPECT_EQ(fresh.blocks(), index.blocks());
  // From the next batch, not made yet: nothing but the end.
  EXPECT_TRUE(Replay(peer, latest + 1, &fresh).empty());
}

// llm-d's centralized mode: the subscriber binds, every replica connects to it.
TEST_F(ZmqKvEventsTest, APublisherConnectsToASubscriberThatBinds) {
  Socket subscriber(context_, ZMQ_SUB);
  ASSERT_EQ(zmq_setsockopt(subscriber.get(), ZMQ_SUBSCRIBE, "", 0), 0);
  ASSERT_EQ(zmq_bind(subscriber.get(), "tcp://127.0.0.1:*"), 0);
  std::array<char, 256> bound{};
  size_t size = bound.size();
  ASSERT_EQ(zmq_getsockopt(subscriber.get(), ZMQ_LAST_ENDPOINT, bound.data(), &size), 0);
  auto started = ZmqKvEventPublisher::Start(log_, {.endpoint = bound.data()});
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_EQ((*started)->endpoint(), bound.data());
  std::optional<std::vector<std::string>> message;
  for (int i = 0; i < 200 && !message; ++i) {
    log_.Append(i + 1.0, {Stored(i, -1)});
    message = subscriber.Receive(50);
  }
  ASSERT_TRUE(message.has_value());
  EXPECT_EQ((*message)[0], "");
}

TEST_F(ZmqKvEventsTest, MalformedReplayRequestsAreDropped) {
  StartPublisher();
  log_.Append(1.0, {Stored(0, -1)});
  Socket peer(context_, ZMQ_DEALER);
  ASSERT_EQ(zmq_connect(peer.get(), publisher_->replay_endpoint().c_str()), 0);
  const std::vector<std::vector<std::string>> malformed = {
      {BigEndian8(1)},              // no delimiter
      {"", "\x01"},                 // a short number
      {"", BigEndian8(1) + "x"},    // a long one
      {"x", BigEndian8(1)},         // no empty delimiter
      {"", BigEndian8(1), "more"},  // too many frames
  };
  for (const std::vector<std::string>& request : malformed) peer.Send(request);
  // The first answer this peer gets is its well-formed request's, and nothing follows it.
  BlockIndex index;
  EXPECT_EQ(Replay(peer, 1, &index), std::vector<uint64_t>{1});
  EXPECT_EQ(index.blocks().size(), 1u);
  EXPECT_FALSE(peer.Receive(200).has_value());
  // A frame over the size limit disconnects its peer; the others are served as before.
  Socket oversized(context_, ZMQ_DEALER);
  ASSERT_EQ(zmq_connect(oversized.get(), publisher_->replay_endpoint().c_str()), 0);
  oversized.Send({"", std::string(4096, 'z')});
  EXPECT_FALSE(oversized.Receive(200).has_value());
  EXPECT_EQ(Replay(peer, 1, nullptr), std::vector<uint64_t>{1});
}

TEST_F(ZmqKvEventsTest, BadEndpointsFailToStartNamingThem) {
  for (const std::string endpoint : {"tcp://*:notaport", "nonsense", "tcp://256.1.1.1:*"}) {
    auto started = ZmqKvEventPublisher::Start(log_, {.endpoint = endpoint});
    ASSERT_FALSE(started.ok()) << endpoint;
    EXPECT_NE(started.status().message().find(endpoint), std::string::npos)
        << started.status();
  }
  auto replay = ZmqKvEventPublisher::Start(
      log_, {.endpoint = "tcp://127.0.0.1:*", .replay_endpoint = "udp://x"});
  ASSERT_FALSE(replay.ok());
  EXPECT_NE(replay.status().message().find("udp://x"), std::string::npos) << replay.status();
}

// The bytes msgspec writes for vLLM's KVEventBatch(ts=1.5, events=[BlockStored(...),
// BlockRemoved(...), AllBlocksCleared()]), worked out from the MessagePack spec by hand.
TEST(VllmKvEventsTest, ABatchIsEncodedAsMsgspecEncodesVllmsStructs) {
  const std::string key = std::string(48, '0') + "00000000000000ff";
  const std::string parent = std::string(48, 'f') + "0000000000000100";
  const scheduler::KvEventBatch batch{
      .sequence = 9,
      .timestamp = 1.5,
      .events = {{.kind = KvEvent::Kind::kBlockStored,
                  .block_hashes = {key},
                  .parent_block_hash = parent,
                  .token_ids = {1, 300}},
                 {.kind = KvEvent::Kind::kBlockRemoved, .block_hashes = {key}},
                 {.kind = KvEvent::Kind::kAllBlocksCleared}}};
  std::string expected;
  for (const int byte : {0x92, 0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0x93,
                         0x98, 0xab}) {
    expected.push_back(static_cast<char>(byte));
  }
  expected += "BlockStored";
  for (const int byte : {0x91, 0xcc, 0xff, 0xcd, 0x01, 0x00, 0x92, 0x01, 0xcd, 0x01, 0x2c,
                         0x02, 0xc0, 0xa3}) {
    expected.push_back(static_cast<char>(byte));
  }
  expected += "GPU";
  expected.push_back(static_cast<char>(0xc0));
  expected.push_back(static_cast<char>(0x93));
  expected.push_back(static_cast<char>(0xac));
  expected += "BlockRemoved";
  for (const int byte : {0x91, 0xcc, 0xff, 0xa3}) expected.push_back(static_cast<char>(byte));
  expected += "GPU";
  expected.push_back(static_cast<char>(0x91));
  expected.push_back(static_cast<char>(0xb0));
  expected += "AllBlocksCleared";
  EXPECT_EQ(EncodeVllmKvEventBatch(batch, 2, "GPU"), expected);
}

TEST(VllmKvEventsTest, HashesAreTheLastEightBytesOfTheKey) {
  const std::string key = base::Sha256Hex("block");
  uint64_t expected = 0;
  for (size_t i = 48; i < 64; i += 2) {
    expected = expected << 8 | std::stoul(key.substr(i, 2), nullptr, 16);
  }
  EXPECT_EQ(VllmBlockHash(key), expected);
  EXPECT_EQ(VllmBlockHash(std::string(48, '0') + "ffffffffffffffff"), UINT64_MAX);
}

}  // namespace
}  // namespace kvd::server
