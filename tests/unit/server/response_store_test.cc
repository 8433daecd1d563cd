// The Responses API's store: a response and its conversation read back by their tenant only,
// deleted, expired after the TTL (on read and when the store is opened again), and a record
// that does not read back is an error, never a crash.
#include "server/responses/local_response_store.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "absl/time/clock.h"
#include "rocksdb/db.h"

namespace kvd::server::responses {
namespace {

using structured::JsonValue;

class ResponseStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kvd-responses-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // stored_ as the response named `id`.
  StoredResponse Named(const std::string& id) const {
    StoredResponse named = stored_;
    named.response["id"] = id;
    return named;
  }

  std::filesystem::path dir_;
  const StoredResponse stored_{
      .response = JsonValue::parse(R"({"id": "resp_1", "output": [], "b": 1, "a": 2})"),
      .conversation = JsonValue::parse(R"([{"type": "message", "role": "user", "content": "x"}])")};
};

TEST_F(ResponseStoreTest, ReadsBackByItsTenantOnlyAndDeletes) {
  auto store = LocalResponseStore::Open(dir_, absl::Hours(1));
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->Put("alpha", "resp_1", stored_).ok());
  auto read = (*store)->Get("alpha", "resp_1");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->response.dump(), stored_.response.dump());  // key order kept
  EXPECT_EQ(read->conversation, stored_.conversation);
  // Another tenant, even one whose id and key run together the same way, sees nothing.
  EXPECT_EQ((*store)->Get("beta", "resp_1").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ((*store)->Get("alph", "aresp_1").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ((*store)->Delete("beta", "resp_1").code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE((*store)->Delete("alpha", "resp_1").ok());
  EXPECT_EQ((*store)->Get("alpha", "resp_1").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ((*store)->Delete("alpha", "resp_1").code(), absl::StatusCode::kNotFound);
  // A record is read back only as the response it names.
  ASSERT_TRUE((*store)->Put("alpha", "resp_2", stored_).ok());
  EXPECT_EQ((*store)->Get("alpha", "resp_2").status().code(), absl::StatusCode::kInternal);
}

TEST_F(ResponseStoreTest, SurvivesReopeningAndExpires) {
  {
    auto store = LocalResponseStore::Open(dir_, absl::Hours(1));
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->Put("alpha", "kept", Named("kept")).ok());
  }
  {
    auto store = LocalResponseStore::Open(dir_, absl::Hours(1));
    ASSERT_TRUE(store.ok());
    EXPECT_TRUE((*store)->Get("alpha", "kept").ok());
    // A TTL already over: expired on read.
  }
  auto store = LocalResponseStore::Open(dir_, absl::Seconds(-1));
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->Put("alpha", "gone", Named("gone")).ok());
  EXPECT_EQ((*store)->Get("alpha", "gone").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ResponseStoreTest, OpeningDropsExpiredAndUnreadableRecords) {
  {
    auto store = LocalResponseStore::Open(dir_, absl::Seconds(-1));
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->Put("alpha", "expired", Named("expired")).ok());
  }
  {
    rocksdb::DB* raw = nullptr;
    rocksdb::Options options;
    ASSERT_TRUE(rocksdb::DB::Open(options, dir_.string(), &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "5:alphabroken", "{not json").ok());
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "5:alphashape", R"({"expires_at": "x"})").ok());
  }
  {
    rocksdb::DB* raw = nullptr;
    rocksdb::Options options;
    ASSERT_TRUE(rocksdb::DB::Open(options, dir_.string(), &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    std::string value;
    EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), "5:alphabroken", &value).ok());
  }
  auto store = LocalResponseStore::Open(dir_, absl::Hours(1));
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->Get("alpha", "expired").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ((*store)->Get("alpha", "broken").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ((*store)->Get("alpha", "shape").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ResponseStoreTest, AStoreInUseIsRefused) {
  auto first = LocalResponseStore::Open(dir_, absl::Hours(1));
  ASSERT_TRUE(first.ok());
  auto second = LocalResponseStore::Open(dir_, absl::Hours(1));
  EXPECT_FALSE(second.ok());
}

}  // namespace
}  // namespace kvd::server::responses
