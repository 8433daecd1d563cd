// The shared tier against a real redis-server: round trips, tenant isolation, listing past
// expired ids, expiry, deletes, corrupt and foreign values, the payload limit, an unreachable
// server and one restarted under the store. And the Redis URL parser.
#include "cache_store/store/remote_document_store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "base/status_details.h"
#include "cache_store/store/payload_codec.h"
#include "tests/support/redis_server.h"
#include "tests/unit/cache_store/test_payload.h"

namespace kvd::cache_store::testing {
namespace {

TEST(ParseRedisUrlTest, ReadsHostPortDatabaseAndCredentials) {
  absl::StatusOr<RedisEndpoint> plain = ParseRedisUrl("redis://redis.kvd.svc");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(*plain, (RedisEndpoint{.host = "redis.kvd.svc", .port = 6379}));

  absl::StatusOr<RedisEndpoint> full = ParseRedisUrl("redis://kvd:p%40ss%3Aw@10.0.0.7:6380/3");
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(*full, (RedisEndpoint{.host = "10.0.0.7",
                                  .port = 6380,
                                  .db = 3,
                                  .user = "kvd",
                                  .password = "p@ss:w"}));

  absl::StatusOr<RedisEndpoint> password_only = ParseRedisUrl("redis://:secret@[::1]:7000");
  ASSERT_TRUE(password_only.ok()) << password_only.status();
  EXPECT_EQ(*password_only, (RedisEndpoint{.host = "::1", .port = 7000, .password = "secret"}));

  absl::StatusOr<RedisEndpoint> socket = ParseRedisUrl("unix:///run/redis.sock?db=2");
  ASSERT_TRUE(socket.ok()) << socket.status();
  EXPECT_EQ(*socket, (RedisEndpoint{.unix_path = "/run/redis.sock", .db = 2}));
}

TEST(ParseRedisUrlTest, RefusesWhatItCannotUse) {
  for (const char* url :
       {"", "http://redis:6379", "rediss://redis:6379", "redis://", "redis://:6379",
        "redis://host:0", "redis://host:65536", "redis://host:port", "redis://host:",
        "redis://host/db", "redis://host/-1", "redis://a%4@host", "redis://a%zz@host",
        "redis://[::1", "redis://[::1]x", "redis://a:b:6379", "redis://:x:y[@:1]:7000",
        "redis://[[::1]]:1", "unix://relative.sock", "unix:///s.sock?x=1"}) {
    absl::StatusOr<RedisEndpoint> endpoint = ParseRedisUrl(url);
    EXPECT_EQ(endpoint.status().code(), absl::StatusCode::kInvalidArgument) << url;
  }
  EXPECT_NE(ParseRedisUrl("rediss://redis:6379").status().message().find("TLS"),
            absl::string_view::npos);
}

class RemoteDocumentStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kvd::testing::RedisServer::Binary().empty()) {
      GTEST_SKIP() << "redis-server is not installed (scripts/bootstrap installs it)";
    }
    ASSERT_TRUE(redis_.Start());
    store_ = std::make_unique<RemoteDocumentStore>(Options());
  }

  RemoteStoreOptions Options() const {
    return RemoteStoreOptions{.endpoint = redis_.Endpoint(), .timeout = absl::Seconds(2)};
  }

  static DocumentMeta Meta(const std::string& tenant, const std::string& id) {
    DocumentMeta meta = TestMeta(tenant, id);
    meta.home = DocumentHome::kShared;
    return meta;
  }

  // Runs one raw command on the server, as another client would.
  RedisReply Raw(std::vector<std::string> command) {
    RedisConnection connection(redis_.Endpoint(), absl::Seconds(2));
    absl::StatusOr<std::vector<RedisReply>> replies = connection.Pipeline({std::move(command)});
    EXPECT_TRUE(replies.ok()) << replies.status();
    return replies.ok() ? replies->front() : RedisReply{};
  }

  kvd::testing::RedisServer redis_;
  std::unique_ptr<RemoteDocumentStore> store_;
};

TEST_F(RemoteDocumentStoreTest, ADocumentComesBackAsWritten) {
  const DocumentPayload payload = SmallPayload(7);
  ASSERT_TRUE(store_->Put(Meta("acme", "doc-1"), payload, /*must_exist=*/false).ok());
  absl::StatusOr<RemoteDocument> read = store_->GetDocument("acme", "doc-1");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->payload, payload);
  EXPECT_EQ(read->sealed, *EncodePayload(payload));
  DocumentMeta expected = Meta("acme", "doc-1");
  expected.stored_bytes = static_cast<int64_t>(EncodePayload(payload)->size());
  expected.kept_entries = payload.kept_entries();
  EXPECT_EQ(read->meta, expected);
  absl::StatusOr<DocumentMeta> meta = store_->GetMeta("acme", "doc-1");
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(*meta, expected);

  const RemoteStoreStats stats = store_->Stats();
  EXPECT_EQ(stats.writes, 1);
  EXPECT_EQ(stats.reads, 2);
  EXPECT_EQ(stats.hits, 1);
  EXPECT_EQ(stats.bytes_written, expected.stored_bytes);
  EXPECT_EQ(stats.bytes_read, expected.stored_bytes);
  EXPECT_EQ(stats.seconds.count, 3u);
}

TEST_F(RemoteDocumentStoreTest, AnotherTenantsDocumentIsNotFoundLikeAMissingOne) {
  ASSERT_TRUE(store_->Put(Meta("acme", "doc-1"), SmallPayload(), /*must_exist=*/false).ok());
  const absl::Status other = store_->GetMeta("globex", "doc-1").status();
  const absl::Status missing = store_->GetMeta("acme", "doc-2").status();
  EXPECT_TRUE(absl::IsNotFound(other)) << other;
  EXPECT_EQ(other.message(), "document doc-1 not found");
  EXPECT_EQ(missing.message(), "document doc-2 not found");
  EXPECT_TRUE(absl::IsNotFound(store_->GetDocument("globex", "doc-1").status()));
  EXPECT_TRUE(absl::IsNotFound(store_->Delete("globex", "doc-1")));
  // Tenants whose names share a prefix, or hold the key separator, stay apart.
  ASSERT_TRUE(store_->Put(Meta("ac", "me:doc-1"), SmallPayload(2), /*must_exist=*/false).ok());
  EXPECT_EQ(store_->GetDocument("acme", "doc-1")->payload, SmallPayload());
  EXPECT_EQ(store_->List("acme", "", 10)->documents.size(), 1u);
}

TEST_F(RemoteDocumentStoreTest, AProcessingDocumentIsNotReadyAndExpiresWithItsLease) {
  RemoteStoreOptions options = Options();
  options.processing_lease = absl::Seconds(60);
  RemoteDocumentStore store(options);
  DocumentMeta meta = Meta("acme", "doc-1");
  meta.status = DocumentStatus::kProcessing;
  ASSERT_TRUE(store.PutMeta(meta, /*must_exist=*/false).ok());
  absl::StatusOr<DocumentMeta> processing = store.GetMeta("acme", "doc-1");
  ASSERT_TRUE(processing.ok()) << processing.status();
  EXPECT_EQ(processing->status, DocumentStatus::kProcessing);
  EXPECT_TRUE(absl::IsFailedPrecondition(store.GetDocument("acme", "doc-1").status()));
  // The lease, not the meta's own expiry (never), bounds the key's life.
  const RedisReply ttl = Raw({"PTTL", "kvd:doc:61636d65:doc-1"});
  EXPECT_GT(ttl.integer, 0);
  EXPECT_LE(ttl.integer, 60'000);
}

TEST_F(RemoteDocumentStoreTest, ExpiredDocumentsLeaveTheListAndTheIndex) {
  for (const char* id : {"doc-a", "doc-b", "doc-c", "doc-d", "doc-e"}) {
    ASSERT_TRUE(store_->Put(Meta("acme", id), SmallPayload(), /*must_exist=*/false).ok());
  }
  DocumentMeta soon = Meta("acme", "doc-b");
  soon.expires = absl::Now() + absl::Milliseconds(100);
  ASSERT_TRUE(store_->Put(soon, SmallPayload(), /*must_exist=*/false).ok());
  DocumentMeta past = Meta("acme", "doc-d");
  past.expires = absl::Now() - absl::Seconds(1);
  ASSERT_TRUE(store_->Put(past, SmallPayload(), /*must_exist=*/false).ok());
  EXPECT_TRUE(absl::IsNotFound(store_->GetMeta("acme", "doc-d").status()));
  // Redis removes the key at its expiry; wait for it rather than for a fixed time.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (store_->GetMeta("acme", "doc-b").ok() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  absl::StatusOr<DocumentPage> first = store_->List("acme", "", 2);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->documents.size(), 2u);
  EXPECT_EQ(first->documents[0].id, "doc-a");
  EXPECT_EQ(first->documents[1].id, "doc-c");
  EXPECT_EQ(first->next_page_token, "doc-c");
  absl::StatusOr<DocumentPage> second = store_->List("acme", first->next_page_token, 2);
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_EQ(second->documents.size(), 1u);
  EXPECT_EQ(second->documents[0].id, "doc-e");
  EXPECT_EQ(second->next_page_token, "");
  EXPECT_EQ(Raw({"ZCARD", "kvd:ids:61636d65"}).integer, 3);
  EXPECT_EQ(store_->List("acme", "", 0).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(RemoteDocumentStoreTest, AWriteOfADocumentDeletedMeanwhileWritesNothing) {
  DocumentMeta meta = Meta("acme", "doc-1");
  meta.status = DocumentStatus::kProcessing;
  ASSERT_TRUE(store_->PutMeta(meta, /*must_exist=*/false).ok());
  ASSERT_TRUE(store_->Delete("acme", "doc-1").ok());
  // The compression ends (or fails) on another replica after the delete.
  EXPECT_TRUE(absl::IsNotFound(store_->Put(Meta("acme", "doc-1"), SmallPayload(), true)));
  meta.status = DocumentStatus::kFailed;
  EXPECT_TRUE(absl::IsNotFound(store_->PutMeta(meta, /*must_exist=*/true)));
  EXPECT_TRUE(absl::IsNotFound(store_->GetMeta("acme", "doc-1").status()));
  EXPECT_EQ(Raw({"ZCARD", "kvd:ids:61636d65"}).integer, 0);
  // A document still there is replaced.
  ASSERT_TRUE(store_->Put(Meta("acme", "doc-2"), SmallPayload(), false).ok());
  EXPECT_TRUE(store_->Put(Meta("acme", "doc-2"), SmallPayload(5), true).ok());
  EXPECT_EQ(store_->GetDocument("acme", "doc-2")->payload, SmallPayload(5));
}

TEST_F(RemoteDocumentStoreTest, ADeleteRemovesTheDocumentAndItsIndexEntry) {
  ASSERT_TRUE(store_->Put(Meta("acme", "doc-1"), SmallPayload(), /*must_exist=*/false).ok());
  ASSERT_TRUE(store_->Delete("acme", "doc-1").ok());
  EXPECT_TRUE(absl::IsNotFound(store_->GetMeta("acme", "doc-1").status()));
  EXPECT_TRUE(absl::IsNotFound(store_->Delete("acme", "doc-1")));
  EXPECT_EQ(Raw({"ZCARD", "kvd:ids:61636d65"}).integer, 0);
}

TEST_F(RemoteDocumentStoreTest, CorruptOrForeignValuesAreDataLossNeverServed) {
  ASSERT_TRUE(store_->Put(Meta("acme", "doc-1"), SmallPayload(), /*must_exist=*/false).ok());
  ASSERT_TRUE(store_->Put(Meta("acme", "doc-2"), SmallPayload(3), /*must_exist=*/false).ok());
  const std::string key1 = "kvd:doc:61636d65:doc-1";
  const std::string key2 = "kvd:doc:61636d65:doc-2";
  // A flipped payload byte.
  std::string kv = Raw({"HGET", key1, "kv"}).text;
  kv[kv.size() / 2] ^= 0x10;
  Raw({"HSET", key1, "kv", kv});
  EXPECT_TRUE(absl::IsDataLoss(store_->GetDocument("acme", "doc-1").status()));
  // Another document's value under this id.
  Raw({"HSET", key1, "meta", Raw({"HGET", key2, "meta"}).text, "kv",
       Raw({"HGET", key2, "kv"}).text});
  const absl::Status foreign = store_->GetDocument("acme", "doc-1").status();
  EXPECT_TRUE(absl::IsDataLoss(foreign)) << foreign;
  EXPECT_TRUE(absl::IsDataLoss(store_->GetMeta("acme", "doc-1").status()));
  // A meta that is not one, a payload that is missing, a value of another type.
  Raw({"HSET", key2, "meta", "{\"format\": 1}"});
  EXPECT_TRUE(absl::IsDataLoss(store_->GetMeta("acme", "doc-2").status()));
  ASSERT_TRUE(store_->Put(Meta("acme", "doc-3"), SmallPayload(), /*must_exist=*/false).ok());
  Raw({"HDEL", "kvd:doc:61636d65:doc-3", "kv"});
  EXPECT_TRUE(absl::IsDataLoss(store_->GetDocument("acme", "doc-3").status()));
  // A key of another type is DataLoss too, not a reason to retry.
  Raw({"DEL", "kvd:doc:61636d65:doc-3"});
  Raw({"SET", "kvd:doc:61636d65:doc-3", "x"});
  EXPECT_TRUE(absl::IsDataLoss(store_->GetDocument("acme", "doc-3").status()));
  EXPECT_TRUE(absl::IsDataLoss(store_->GetMeta("acme", "doc-3").status()));
  // An index that repeats or goes backwards ends the listing instead of looping.
  Raw({"DEL", "kvd:ids:61636d65"});
  Raw({"SET", "kvd:ids:61636d65", "x"});
  EXPECT_TRUE(absl::IsDataLoss(store_->List("acme", "", 10).status()));
}

TEST_F(RemoteDocumentStoreTest, APayloadOverTheLimitIsRefusedBeforeAnythingIsWritten) {
  RemoteStoreOptions options = Options();
  options.max_payload_bytes = 64;
  RemoteDocumentStore store(options);
  const absl::Status status = store.Put(Meta("acme", "doc-1"), SmallPayload(), /*must_exist=*/false);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ErrorCodeOf(status), "request_too_large");
  EXPECT_TRUE(absl::IsNotFound(store.GetMeta("acme", "doc-1").status()));
  // Nor is a larger one served.
  ASSERT_TRUE(store_->Put(Meta("acme", "doc-2"), SmallPayload(), /*must_exist=*/false).ok());
  EXPECT_TRUE(absl::IsDataLoss(store.GetDocument("acme", "doc-2").status()));
}

TEST_F(RemoteDocumentStoreTest, AnUnreachableServerIsUnavailableAndARestartedOneServesAgain) {
  ASSERT_TRUE(store_->Put(Meta("acme", "doc-1"), SmallPayload(), /*must_exist=*/false).ok());
  redis_.Stop(SIGKILL);
  EXPECT_TRUE(absl::IsUnavailable(store_->GetMeta("acme", "doc-1").status()));
  EXPECT_TRUE(absl::IsUnavailable(store_->Put(Meta("acme", "doc-2"), SmallPayload(), /*must_exist=*/false)));
  EXPECT_TRUE(absl::IsUnavailable(store_->Delete("acme", "doc-1")));
  EXPECT_TRUE(absl::IsUnavailable(store_->Ping()));
  EXPECT_GE(store_->Stats().failures, 4);
  // The append-only file kept what was acknowledged; the store reconnects by itself.
  ASSERT_TRUE(redis_.Start());
  ASSERT_TRUE(store_->Ping().ok());
  absl::StatusOr<RemoteDocument> read = store_->GetDocument("acme", "doc-1");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->payload, SmallPayload());
}

TEST_F(RemoteDocumentStoreTest, WrongCredentialsAreUnavailableNotACrash) {
  Raw({"CONFIG", "SET", "requirepass", "right"});
  RemoteStoreOptions options = Options();
  options.endpoint.password = "wrong";
  RemoteDocumentStore wrong(options);
  EXPECT_TRUE(absl::IsUnavailable(wrong.Ping()));
  options.endpoint.password = "right";
  RemoteDocumentStore right(options);
  EXPECT_TRUE(right.Put(Meta("acme", "doc-1"), SmallPayload(), /*must_exist=*/false).ok());
  // Without credentials, Redis refuses every command.
  EXPECT_TRUE(absl::IsUnavailable(store_->Put(Meta("acme", "doc-2"), SmallPayload(), /*must_exist=*/false)));
}

}  // namespace
}  // namespace kvd::cache_store::testing
