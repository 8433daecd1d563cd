// Where documents live with a shared tier (a real redis-server on loopback): writes go to Redis
// first and keep the local copy's home, a document deleted in Redis stays deleted, reads copy
// Redis's cache locally, stale copies are dropped, and copies count against no quota here.
#include "documents/document_storage.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "base/status_details.h"
#include "documents/document_writer.h"
#include "tests/support/redis_server.h"
#include "tests/unit/cache_store/test_payload.h"

namespace kvd::documents {
namespace {

using cache_store::DocumentHome;
using cache_store::DocumentMeta;
using cache_store::DocumentStatus;
using cache_store::testing::SmallPayload;
using cache_store::testing::TestIdentity;
using cache_store::testing::TestMeta;

class DocumentStorageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kvd::testing::RedisServer::Binary().empty()) {
      GTEST_SKIP() << "redis-server is not installed (scripts/bootstrap installs it)";
    }
    ASSERT_TRUE(redis_.Start());
    dir_ = std::filesystem::temp_directory_path() /
           ("kvd_storage_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    storage_ = Open("here");
    elsewhere_ = Open("elsewhere");
  }
  void TearDown() override {
    storage_.reset();
    elsewhere_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A replica's storage: a store of its own and the shared Redis.
  std::unique_ptr<DocumentStorage> Open(const std::string& name) {
    auto local = cache_store::DocumentStore::Open(dir_ / name);
    EXPECT_TRUE(local.ok()) << local.status();
    return std::make_unique<DocumentStorage>(
        *std::move(local), std::make_unique<cache_store::RemoteDocumentStore>(
                               cache_store::RemoteStoreOptions{.endpoint = redis_.Endpoint()}));
  }

  // Uploads on `storage` as the service does: the processing meta, then the compression's.
  static void Upload(DocumentStorage& storage, const std::string& id, uint32_t seed = 1) {
    DocumentMeta meta = TestMeta("acme", id);
    meta.status = DocumentStatus::kProcessing;
    ASSERT_TRUE(storage.PutMeta(meta).ok());
    ASSERT_TRUE(storage.Put(TestMeta("acme", id), SmallPayload(seed)).ok());
  }

  kvd::testing::RedisServer redis_;
  std::filesystem::path dir_;
  std::unique_ptr<DocumentStorage> storage_;
  std::unique_ptr<DocumentStorage> elsewhere_;
};

TEST_F(DocumentStorageTest, TheUploaderCountsADocumentAndAReplicaThatCopiedItDoesNot) {
  ASSERT_NO_FATAL_FAILURE(Upload(*elsewhere_, "doc-1"));
  EXPECT_EQ(elsewhere_->local().GetMeta("acme", "doc-1")->home, DocumentHome::kShared);
  // Read here: served from Redis, kept as a copy.
  absl::StatusOr<cache_store::DocumentPayload> read =
      storage_->GetPayload("acme", "doc-1", TestIdentity());
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, SmallPayload());
  // A re-cut here (another ratio) keeps the copy a copy.
  DocumentMeta recut = TestMeta("acme", "doc-1");
  recut.identity.ratio = 0.2;
  ASSERT_TRUE(storage_->Put(recut, SmallPayload(2)).ok());
  EXPECT_EQ(storage_->local().GetMeta("acme", "doc-1")->home, DocumentHome::kCopy);
  EXPECT_EQ(CountStored(storage_->local())->usage.count("acme"), 0u);
  EXPECT_EQ(CountStored(elsewhere_->local())->usage.at("acme").documents, 1);
  // The uploader sees the re-cut: Redis's meta, then its cache (the local one is of the old
  // ratio), and keeps counting the document as its own.
  EXPECT_EQ(elsewhere_->GetMeta("acme", "doc-1")->identity.ratio, 0.2);
  EXPECT_EQ(*elsewhere_->GetPayload("acme", "doc-1", recut.identity), SmallPayload(2));
  elsewhere_->AwaitCopies();
  EXPECT_EQ(CountStored(elsewhere_->local())->usage.at("acme").documents, 1);
}

TEST_F(DocumentStorageTest, ADocumentDeletedElsewhereWhileCompressingStaysDeleted) {
  DocumentMeta meta = TestMeta("acme", "doc-1");
  meta.status = DocumentStatus::kProcessing;
  ASSERT_TRUE(storage_->PutMeta(meta).ok());
  ASSERT_TRUE(elsewhere_->Delete("acme", "doc-1").ok());
  EXPECT_TRUE(absl::IsNotFound(storage_->Put(TestMeta("acme", "doc-1"), SmallPayload())));
  meta.status = DocumentStatus::kFailed;
  EXPECT_TRUE(storage_->PutFailedMeta(meta).ok());
  EXPECT_TRUE(absl::IsNotFound(storage_->GetMeta("acme", "doc-1").status()));
  EXPECT_TRUE(absl::IsNotFound(storage_->local().GetMeta("acme", "doc-1").status()));
}

TEST_F(DocumentStorageTest, CopiesTheSharedTierNoLongerHoldsAreDropped) {
  ASSERT_NO_FATAL_FAILURE(Upload(*elsewhere_, "doc-1"));
  ASSERT_NO_FATAL_FAILURE(Upload(*elsewhere_, "doc-2", 2));
  ASSERT_TRUE(storage_->GetPayload("acme", "doc-1", TestIdentity()).ok());
  ASSERT_TRUE(storage_->GetPayload("acme", "doc-2", TestIdentity()).ok());
  // A document stored before the tier was configured is this replica's alone.
  ASSERT_TRUE(storage_->local().Put(TestMeta("acme", "doc-old"), SmallPayload(3)).ok());
  storage_->AwaitCopies();
  ASSERT_TRUE(elsewhere_->Delete("acme", "doc-1").ok());
  absl::StatusOr<int64_t> dropped = storage_->DropStaleCopies();
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  EXPECT_EQ(*dropped, 1);
  EXPECT_TRUE(absl::IsNotFound(storage_->local().GetMeta("acme", "doc-1").status()));
  EXPECT_TRUE(storage_->local().GetMeta("acme", "doc-2").ok());
  EXPECT_TRUE(storage_->local().GetMeta("acme", "doc-old").ok());
}

TEST_F(DocumentStorageTest, WithoutRedisWritesAreRetryableAndLocalDocumentsStillRead) {
  ASSERT_NO_FATAL_FAILURE(Upload(*storage_, "doc-1"));
  redis_.Stop(SIGKILL);
  DocumentMeta meta = TestMeta("acme", "doc-2");
  meta.status = DocumentStatus::kProcessing;
  const absl::Status refused = storage_->PutMeta(meta);
  EXPECT_TRUE(absl::IsUnavailable(refused)) << refused;
  EXPECT_EQ(ErrorCodeOf(refused), "shared_tier_unavailable");
  EXPECT_EQ(RetryAfterOf(refused), "1");
  EXPECT_TRUE(absl::IsUnavailable(storage_->Delete("acme", "doc-1")));
  EXPECT_EQ(*storage_->GetPayload("acme", "doc-1", TestIdentity()), SmallPayload());
  // Not here, and Redis cannot say: unavailable, not missing.
  EXPECT_TRUE(absl::IsUnavailable(storage_->GetMeta("acme", "doc-9").status()));
}

}  // namespace
}  // namespace kvd::documents
