// The RocksDB document store: atomic writes, tenant isolation, identity checks, corruption
// detection, restarts, durability through a power loss, listing, deletion and expiry.
#include "cache_store/store/document_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <filesystem>
#include <set>
#include <thread>

#include "cache_store/store/internal/keys.h"
#include "cache_store/store/payload_codec.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"
#include "tests/unit/cache_store/power_loss_file_system.h"
#include "tests/unit/cache_store/test_payload.h"

namespace kvd::cache_store::testing {
namespace {

class DocumentStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kvd_store_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    Reopen();
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Reopen() {
    store_.reset();
    absl::StatusOr<std::unique_ptr<DocumentStore>> store = DocumentStore::Open(dir_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  static DocumentMeta Meta(const std::string& tenant, const std::string& id) {
    return TestMeta(tenant, id);
  }

  // Rewrites one raw value of the kv column family through RocksDB directly.
  void CorruptPayload(const std::string& tenant, const std::string& id, size_t byte) {
    store_.reset();
    std::vector<rocksdb::ColumnFamilyDescriptor> families = {
        {rocksdb::kDefaultColumnFamilyName, {}},
        {internal::kMetaFamily, {}},
        {internal::kKvFamily, {}}};
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open({}, dir_.string(), families, &handles, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    const std::string key = internal::DocumentKey(tenant, id);
    std::string value;
    ASSERT_TRUE(db->Get({}, handles[2], key, &value).ok());
    value[byte % value.size()] ^= 0x10;
    ASSERT_TRUE(db->Put({}, handles[2], key, value).ok());
    for (auto* handle : handles) ASSERT_TRUE(db->DestroyColumnFamilyHandle(handle).ok());
    ASSERT_TRUE(db->Close().ok());
    db.reset();
    Reopen();
  }

  std::filesystem::path dir_;
  std::unique_ptr<DocumentStore> store_;
};

TEST_F(DocumentStoreTest, RoundTripsMetaAndPayload) {
  const DocumentPayload payload = SmallPayload();
  ASSERT_TRUE(store_->Put(Meta("acme", "doc-1"), payload).ok());
  absl::StatusOr<DocumentMeta> meta = store_->GetMeta("acme", "doc-1");
  ASSERT_TRUE(meta.ok()) << meta.status();
  DocumentMeta expected = Meta("acme", "doc-1");
  expected.kept_entries = payload.kept_entries();
  expected.stored_bytes = meta->stored_bytes;
  EXPECT_EQ(*meta, expected);
  EXPECT_GT(meta->stored_bytes, 0);
  EXPECT_EQ(meta->expires, absl::InfiniteFuture());
  absl::StatusOr<DocumentPayload> loaded = store_->GetPayload("acme", "doc-1", TestIdentity());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(*loaded, payload);
}

TEST_F(DocumentStoreTest, ACopyStoresTheSealedBytesItIsGivenAsAPutWould) {
  const DocumentPayload payload = SmallPayload(4);
  DocumentMeta meta = Meta("acme", "doc-c");
  absl::StatusOr<std::string> sealed = SealDocument(meta, payload);
  ASSERT_TRUE(sealed.ok()) << sealed.status();
  meta.home = DocumentHome::kCopy;
  ASSERT_TRUE(store_->PutCopy(meta, *sealed).ok());
  absl::StatusOr<DocumentMeta> stored = store_->GetMeta("acme", "doc-c");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(*stored, meta);
  EXPECT_EQ(stored->stored_bytes, static_cast<int64_t>(sealed->size()));
  EXPECT_EQ(*store_->GetPayload("acme", "doc-c", TestIdentity()), payload);
  meta.tenant = "";
  EXPECT_EQ(store_->PutCopy(meta, *sealed).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(DocumentStoreTest, SurvivesReopen) {
  const DocumentPayload payload = SmallPayload(9);
  DocumentMeta meta = Meta("acme", "doc-r");
  meta.expires = absl::FromUnixSeconds(1'800'000'000);
  ASSERT_TRUE(store_->Put(meta, payload).ok());
  Reopen();
  absl::StatusOr<DocumentMeta> reread = store_->GetMeta("acme", "doc-r");
  ASSERT_TRUE(reread.ok()) << reread.status();
  EXPECT_EQ(reread->expires, meta.expires);
  EXPECT_EQ(*store_->GetPayload("acme", "doc-r", TestIdentity()), payload);
}

TEST_F(DocumentStoreTest, AnotherTenantsDocumentIsNotFoundLikeAMissingOne) {
  ASSERT_TRUE(store_->Put(Meta("acme", "doc-1"), SmallPayload()).ok());
  const absl::Status missing = store_->GetMeta("acme", "doc-2").status();
  const absl::Status foreign = store_->GetMeta("globex", "doc-1").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(foreign.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.message(), "document doc-2 not found");
  EXPECT_EQ(foreign.message(), "document doc-1 not found");
  EXPECT_EQ(store_->GetPayload("globex", "doc-1", TestIdentity()).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->Delete("globex", "doc-1").code(), absl::StatusCode::kNotFound);
  // A tenant whose name extends another's sees nothing of it either.
  EXPECT_EQ(store_->GetMeta("acm", "edoc-1").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store_->List("globex", "", 10)->documents.empty());
  EXPECT_TRUE(store_->List("acm", "", 10)->documents.empty());
  EXPECT_TRUE(store_->GetMeta("acme", "doc-1").ok());  // still there for its owner
}

TEST_F(DocumentStoreTest, IdentityMismatchNamesTheField) {
  ASSERT_TRUE(store_->Put(Meta("acme", "doc-1"), SmallPayload()).ok());
  CacheIdentity other = TestIdentity();
  other.model_digest = "another-model";
  absl::Status status = store_->GetPayload("acme", "doc-1", other).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("model_digest"), std::string::npos) << status;
  other = TestIdentity();
  other.ratio = 0.5;
  status = store_->GetPayload("acme", "doc-1", other).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("ratio"), std::string::npos) << status;
}

TEST_F(DocumentStoreTest, ProcessingDocumentHasNoPayloadYet) {
  DocumentMeta meta = Meta("acme", "doc-p");
  meta.status = DocumentStatus::kProcessing;
  ASSERT_TRUE(store_->PutMeta(meta).ok());
  EXPECT_EQ(store_->GetMeta("acme", "doc-p")->status, DocumentStatus::kProcessing);
  EXPECT_EQ(store_->GetPayload("acme", "doc-p", TestIdentity()).status().code(),
            absl::StatusCode::kFailedPrecondition);
  meta.status = DocumentStatus::kFailed;
  meta.failure_reason = "document too long";
  ASSERT_TRUE(store_->PutMeta(meta).ok());
  EXPECT_EQ(store_->GetMeta("acme", "doc-p")->failure_reason, "document too long");
}

TEST_F(DocumentStoreTest, CorruptPayloadIsDataLoss) {
  ASSERT_TRUE(store_->Put(Meta("acme", "doc-1"), SmallPayload()).ok());
  for (size_t byte : {size_t{0}, size_t{5}, size_t{40}, size_t{200}, size_t{100000}}) {
    CorruptPayload("acme", "doc-1", byte);
    absl::Status status = store_->GetPayload("acme", "doc-1", TestIdentity()).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << byte;
    EXPECT_NE(status.message().find("doc-1"), std::string::npos) << status;
    ASSERT_TRUE(store_->Put(Meta("acme", "doc-1"), SmallPayload()).ok());
  }
}

TEST_F(DocumentStoreTest, WriteIsVisibleOnlyWhenComplete) {
  // A reader racing a writer sees either no document or the whole of it, never a meta whose
  // payload is missing or belongs to another version.
  const DocumentPayload first = SmallPayload(1), second = SmallPayload(2, 3, 2, 8, 9);
  std::atomic<bool> done = false;
  std::thread writer([&] {
    for (int i = 0; i < 200; ++i) {
      DocumentMeta meta = Meta("acme", "doc-a");
      meta.token_count = i % 2 == 0 ? first.original_length : second.original_length;
      ASSERT_TRUE(store_->Put(meta, i % 2 == 0 ? first : second).ok());
    }
    done = true;
  });
  while (!done) {
    absl::StatusOr<DocumentPayload> payload = store_->GetPayload("acme", "doc-a", TestIdentity());
    if (!payload.ok()) {
      ASSERT_EQ(payload.status().code(), absl::StatusCode::kNotFound) << payload.status();
      continue;
    }
    ASSERT_TRUE(*payload == first || *payload == second);
  }
  writer.join();
  EXPECT_TRUE(store_->GetPayload("acme", "doc-a", TestIdentity()).ok());
}

TEST_F(DocumentStoreTest, ListsInIdOrderByPage) {
  std::vector<std::string> ids;
  for (int i = 0; i < 7; ++i) {
    ids.push_back("doc-" + std::string(1, static_cast<char>('g' - i)));
    ASSERT_TRUE(store_->Put(Meta("acme", ids.back()), SmallPayload()).ok());
  }
  ASSERT_TRUE(store_->Put(Meta("acme-2", "doc-0"), SmallPayload()).ok());
  std::sort(ids.begin(), ids.end());
  std::vector<std::string> listed;
  std::string token;
  int pages = 0;
  do {
    absl::StatusOr<DocumentPage> page = store_->List("acme", token, 3);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const DocumentMeta& meta : page->documents) listed.push_back(meta.id);
    token = page->next_page_token;
    ++pages;
  } while (!token.empty());
  EXPECT_EQ(listed, ids);
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(store_->List("acme", "", 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->List("acme", "", 7)->next_page_token, "");
}

TEST_F(DocumentStoreTest, DeleteRemovesMetaAndPayload) {
  ASSERT_TRUE(store_->Put(Meta("acme", "doc-1"), SmallPayload()).ok());
  ASSERT_TRUE(store_->Delete("acme", "doc-1").ok());
  EXPECT_EQ(store_->GetMeta("acme", "doc-1").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->GetPayload("acme", "doc-1", TestIdentity()).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->Delete("acme", "doc-1").code(), absl::StatusCode::kNotFound);
  Reopen();
  EXPECT_EQ(store_->GetMeta("acme", "doc-1").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(DocumentStoreTest, DeleteExpiredRemovesOnlyExpired) {
  const absl::Time now = absl::FromUnixSeconds(1'750'000'000);
  DocumentMeta old_doc = Meta("acme", "doc-old");
  old_doc.expires = now - absl::Seconds(1);
  DocumentMeta due = Meta("globex", "doc-due");
  due.expires = now;
  DocumentMeta later = Meta("acme", "doc-later");
  later.expires = now + absl::Hours(1);
  for (const DocumentMeta& meta : {old_doc, due, later, Meta("acme", "doc-forever")}) {
    ASSERT_TRUE(store_->Put(meta, SmallPayload()).ok());
  }
  absl::StatusOr<int64_t> removed = store_->DeleteExpired(now);
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(*removed, 2);
  EXPECT_EQ(store_->GetMeta("acme", "doc-old").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->GetMeta("globex", "doc-due").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store_->GetMeta("acme", "doc-later").ok());
  EXPECT_TRUE(store_->GetMeta("acme", "doc-forever").ok());
  EXPECT_EQ(*store_->DeleteExpired(now), 0);
}

TEST_F(DocumentStoreTest, ForEachMetaVisitsEveryTenantAndSkipsUnreadableMetas) {
  for (const auto& [tenant, id] :
       {std::pair{"acme", "doc-a"}, std::pair{"globex", "doc-b"}, std::pair{"acme", "doc-c"}}) {
    ASSERT_TRUE(store_->Put(Meta(tenant, id), SmallPayload()).ok());
  }
  ASSERT_TRUE(store_->Flush().ok());
  std::vector<std::string> seen;
  absl::StatusOr<int64_t> unreadable = store_->ForEachMeta(
      [&](const DocumentMeta& meta) { seen.push_back(meta.tenant + "/" + meta.id); });
  ASSERT_TRUE(unreadable.ok()) << unreadable.status();
  EXPECT_EQ(*unreadable, 0);
  EXPECT_EQ(seen, (std::vector<std::string>{"acme/doc-a", "acme/doc-c", "globex/doc-b"}));
}

// Writes three documents through `fs` (one deleted again, one failed), cuts the power and drops
// what was not synced, and reopens the store from what is left.
void WriteThenLosePower(const std::filesystem::path& dir, bool sync_writes, PowerLossFileSystem& fs,
                        const std::vector<DocumentMeta>& metas) {
  const std::unique_ptr<rocksdb::Env> env =
      rocksdb::NewCompositeEnv(std::shared_ptr<rocksdb::FileSystem>(&fs, [](auto*) {}));
  {
    absl::StatusOr<std::unique_ptr<DocumentStore>> store =
        DocumentStore::Open(dir, {.sync_writes = sync_writes, .env = env.get()});
    ASSERT_TRUE(store.ok()) << store.status();
    for (size_t i = 0; i < metas.size(); ++i) {
      ASSERT_TRUE((*store)->Put(metas[i], SmallPayload(static_cast<uint32_t>(i + 1))).ok());
    }
    ASSERT_TRUE((*store)->Delete(metas[0].tenant, metas[0].id).ok());
    DocumentMeta failed = metas[1];
    failed.status = DocumentStatus::kFailed;
    failed.failure_reason = "cut off";
    ASSERT_TRUE((*store)->PutMeta(failed).ok());
    fs.LosePower();
  }
  fs.DropUnsyncedData();
}

TEST_F(DocumentStoreTest, AcknowledgedWritesSurviveAPowerLoss) {
  store_.reset();
  const std::vector<DocumentMeta> metas = {Meta("acme", "doc-deleted"), Meta("acme", "doc-failed"),
                                           Meta("acme", "doc-ready")};
  PowerLossFileSystem fs;
  // The default options: every write is synced before it returns.
  ASSERT_NO_FATAL_FAILURE(WriteThenLosePower(dir_, DocumentStoreOptions{}.sync_writes, fs, metas));
  Reopen();
  EXPECT_EQ(store_->GetMeta("acme", "doc-deleted").status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<DocumentMeta> failed = store_->GetMeta("acme", "doc-failed");
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_EQ(failed->status, DocumentStatus::kFailed);
  absl::StatusOr<DocumentPayload> ready = store_->GetPayload("acme", "doc-ready", TestIdentity());
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_EQ(*ready, SmallPayload(3));
}

TEST_F(DocumentStoreTest, UnsyncedWritesAreLostInAPowerLoss) {
  // What the test above guards against: without syncing, the log is still in the page cache
  // when the power goes, and the acknowledged documents with it.
  store_.reset();
  const std::vector<DocumentMeta> metas = {Meta("acme", "doc-deleted"), Meta("acme", "doc-failed"),
                                           Meta("acme", "doc-ready")};
  PowerLossFileSystem fs;
  ASSERT_NO_FATAL_FAILURE(WriteThenLosePower(dir_, /*sync_writes=*/false, fs, metas));
  Reopen();
  EXPECT_EQ(store_->GetMeta("acme", "doc-ready").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->GetMeta("acme", "doc-failed").status().code(), absl::StatusCode::kNotFound);
}

TEST(DocumentIdTest, IdsAreUrlSafeUniqueAndLong) {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    absl::StatusOr<std::string> id = DocumentStore::NewDocumentId();
    ASSERT_TRUE(id.ok()) << id.status();
    ASSERT_EQ(id->size(), 26u) << *id;  // "doc-" + 22 base64 characters = 128 bits
    ASSERT_EQ(id->substr(0, 4), "doc-");
    for (char c : id->substr(4)) {
      ASSERT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') << *id;
    }
    ids.insert(*id);
  }
  EXPECT_EQ(ids.size(), 1000u);
}

TEST(DocumentIdTest, IdsCarryTheReplicaThatStoresThem) {
  for (const std::string replica : {"kvd-0", "a", "kvd.east_1-12"}) {
    for (int i = 0; i < 200; ++i) {
      absl::StatusOr<std::string> id = DocumentStore::NewDocumentId(replica);
      ASSERT_TRUE(id.ok()) << id.status();
      ASSERT_EQ(id->size(), 4 + replica.size() + 1 + 22) << *id;
      ASSERT_EQ(DocumentStore::ReplicaOfDocumentId(*id), replica) << *id;
    }
  }
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(DocumentStore::ReplicaOfDocumentId(*DocumentStore::NewDocumentId()), "");
  }
  EXPECT_EQ(DocumentStore::ReplicaOfDocumentId("report.pdf"), "");
  EXPECT_EQ(DocumentStore::ReplicaOfDocumentId(""), "");
}

TEST(DocumentStoreOpenTest, SecondOpenOfTheSameDirectoryFails) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("kvd_store_lock_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto first = DocumentStore::Open(dir);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(DocumentStore::Open(dir).ok());
  first->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kvd::cache_store::testing
