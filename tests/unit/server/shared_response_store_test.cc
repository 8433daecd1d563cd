// Stored responses in the shared tier's Redis (a real redis-server on loopback): read back by
// their tenant only, from any store on the same Redis, written with Redis's own expiry, deleted
// for every replica at once; a value kvd did not write is an error, and a Redis that is gone is
// Unavailable, never a crash or a hang.
#include "server/responses/shared_response_store.h"

#include <gtest/gtest.h>

#include <memory>

#include "tests/support/redis_server.h"

namespace kvd::server::responses {
namespace {

using cache_store::RedisConnection;
using cache_store::RedisPool;
using cache_store::RedisReply;
using structured::JsonValue;

class SharedResponseStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kvd::testing::RedisServer::Binary().empty()) {
      GTEST_SKIP() << "redis-server is not installed (scripts/bootstrap installs it)";
    }
    ASSERT_TRUE(redis_.Start());
  }

  // A store as one replica opens it.
  std::unique_ptr<SharedResponseStore> Replica() const {
    return std::make_unique<SharedResponseStore>(
        std::make_shared<RedisPool>(
            cache_store::RedisPoolOptions{.endpoint = redis_.Endpoint(),
                                          .timeout = absl::Seconds(1)}),
        "kvd:", absl::Hours(1));
  }

  // One raw command, as another client would send it.
  RedisReply Raw(std::vector<std::string> command) const {
    RedisConnection connection(redis_.Endpoint(), absl::Seconds(2));
    auto replies = connection.Pipeline({std::move(command)});
    EXPECT_TRUE(replies.ok()) << replies.status();
    return replies.ok() ? replies->front() : RedisReply{};
  }

  kvd::testing::RedisServer redis_;
  const StoredResponse stored_{
      .response = JsonValue::parse(R"({"id": "resp_1", "output": [], "b": 1, "a": 2})"),
      .conversation = JsonValue::parse(R"([{"type": "message", "role": "user", "content": "x"}])")};
};

TEST_F(SharedResponseStoreTest, AnyReplicaReadsWhatOneStoredForItsTenantOnly) {
  auto first = Replica();
  auto second = Replica();
  ASSERT_TRUE(first->Put("alpha", "resp_1", stored_).ok());
  auto read = second->Get("alpha", "resp_1");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->response.dump(), stored_.response.dump());  // key order kept
  EXPECT_EQ(read->conversation, stored_.conversation);
  EXPECT_EQ(second->Get("beta", "resp_1").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(second->Delete("beta", "resp_1").code(), absl::StatusCode::kNotFound);
  // Redis drops it after the TTL on its own.
  const RedisReply ttl = Raw({"PTTL", "kvd:resp:" + std::string("616c706861") + ":resp_1"});
  ASSERT_EQ(ttl.type, RedisReply::Type::kInteger);
  EXPECT_GT(ttl.integer, 0);
  EXPECT_LE(ttl.integer, 3600 * 1000);

  ASSERT_TRUE(second->Delete("alpha", "resp_1").ok());
  EXPECT_EQ(first->Get("alpha", "resp_1").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(first->Delete("alpha", "resp_1").code(), absl::StatusCode::kNotFound);
}

TEST_F(SharedResponseStoreTest, AValueKvdDidNotWriteIsAnError) {
  auto store = Replica();
  const std::string key = "kvd:resp:616c706861:resp_1";
  for (const std::string& value :
       {std::string("{not json"), std::string(R"({"expires_at": "x"})"),
        std::string(R"({"expires_at": 99999999999, "response": {"id": "resp_2"},
                        "conversation": []})")}) {
    ASSERT_EQ(Raw({"SET", key, value}).type, RedisReply::Type::kStatus);
    EXPECT_EQ(store->Get("alpha", "resp_1").status().code(), absl::StatusCode::kInternal)
        << value;
  }
  ASSERT_EQ(Raw({"DEL", key}).type, RedisReply::Type::kInteger);
  ASSERT_EQ(Raw({"HSET", key, "f", "v"}).type, RedisReply::Type::kInteger);
  EXPECT_EQ(store->Get("alpha", "resp_1").status().code(), absl::StatusCode::kDataLoss)
      << "a key of another type";
  // A record past its expiry reads as missing even before Redis drops it.
  ASSERT_EQ(Raw({"DEL", key}).type, RedisReply::Type::kInteger);
  ASSERT_EQ(Raw({"SET", key, R"({"expires_at": 1, "response": {"id": "resp_1"},
                                  "conversation": []})"})
                .type,
            RedisReply::Type::kStatus);
  EXPECT_EQ(store->Get("alpha", "resp_1").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(SharedResponseStoreTest, ARedisThatIsGoneIsUnavailable) {
  auto store = Replica();
  redis_.Stop(SIGKILL);
  EXPECT_EQ(store->Put("alpha", "resp_1", stored_).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store->Get("alpha", "resp_1").status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store->Delete("alpha", "resp_1").code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace kvd::server::responses
