// KvEventLog: numbered batches, a follower's catch-up, the snapshot for a new or lagging
// follower, the bound on what it keeps, and listeners.
#include "scheduler/kv_events.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace kvd::scheduler {
namespace {

KvEvent Stored(const std::string& hash, const std::string& parent = "") {
  return {.kind = KvEvent::Kind::kBlockStored,
          .block_hashes = {hash},
          .parent_block_hash = parent,
          .token_ids = {1, 2}};
}
KvEvent Removed(const std::string& hash) {
  return {.kind = KvEvent::Kind::kBlockRemoved, .block_hashes = {hash}};
}

// The block set a follower holds after applying `batches` to `blocks`.
void Apply(const std::vector<KvEventBatch>& batches, std::set<std::string>& blocks) {
  for (const KvEventBatch& batch : batches) {
    for (const KvEvent& event : batch.events) {
      if (event.kind == KvEvent::Kind::kAllBlocksCleared) blocks.clear();
      for (const std::string& hash : event.block_hashes) {
        if (event.kind == KvEvent::Kind::kBlockStored) blocks.insert(hash);
        if (event.kind == KvEvent::Kind::kBlockRemoved) blocks.erase(hash);
      }
    }
  }
}

TEST(KvEventLogTest, AFollowerGetsTheBatchesItHasNotSeen) {
  KvEventLog log(16, 8);
  EXPECT_TRUE(log.Since(0).empty());
  log.Append(1.0, {Stored("a"), Stored("b", "a")});
  log.Append(2.0, {});  // dropped
  log.Append(3.0, {Removed("b")});
  EXPECT_EQ(log.latest(), 2u);
  EXPECT_EQ(log.cached_blocks(), 1u);
  const std::vector<KvEventBatch> after_first = log.Since(1);
  ASSERT_EQ(after_first.size(), 1u);
  EXPECT_EQ(after_first[0].sequence, 2u);
  EXPECT_EQ(after_first[0].timestamp, 3.0);
  EXPECT_EQ(after_first[0].events, std::vector<KvEvent>{Removed("b")});
  EXPECT_TRUE(log.Since(2).empty());
}

TEST(KvEventLogTest, NewAndLaggingFollowersStartFromASnapshotInStoringOrder) {
  KvEventLog log(16, 1);  // one event: whole batches, the latest always
  log.Append(1.0, {Stored("a")});
  log.Append(2.0, {Stored("b", "a")});
  log.Append(3.0, {Stored("c", "b"), Removed("a")});  // the log holds batch 3 alone
  for (const uint64_t after : {uint64_t{0}, uint64_t{1}, uint64_t{99}}) {
    EXPECT_FALSE(log.Holds(after)) << after;
    const std::vector<KvEventBatch> batches = log.Since(after);
    ASSERT_EQ(batches.size(), 1u) << after;
    EXPECT_EQ(batches[0].sequence, 3u);
    const std::vector<KvEvent> expected = {{.kind = KvEvent::Kind::kAllBlocksCleared},
                                           Stored("b", "a"), Stored("c", "b")};
    EXPECT_EQ(batches[0].events, expected) << after;
  }
  // A follower at 2 missed only batch 3, which the log holds.
  EXPECT_TRUE(log.Holds(2));
  EXPECT_FALSE(log.Holds(3));  // up to date: nothing to hold
  ASSERT_EQ(log.Since(2).size(), 1u);
  EXPECT_EQ(log.Since(2)[0].events, (std::vector<KvEvent>{Stored("c", "b"), Removed("a")}));
}

TEST(KvEventLogTest, FollowersThatLagOrKeepUpAgreeWithTheLog) {
  KvEventLog log(16, 6);
  std::set<std::string> steady, lagging;
  uint64_t steady_seen = 0, lagging_seen = 0;
  for (int i = 0; i < 60; ++i) {
    std::vector<KvEvent> events = {Stored("k" + std::to_string(i))};
    if (i % 3 == 0) events.push_back(Removed("k" + std::to_string(i / 2)));
    log.Append(i, std::move(events));
    std::vector<KvEventBatch> batches = log.Since(steady_seen);
    Apply(batches, steady);
    steady_seen = batches.back().sequence;
    // The other catches up every few batches, sometimes too late for the log (a snapshot).
    if (i % (2 + i % 5) != 0) continue;
    batches = log.Since(lagging_seen);
    Apply(batches, lagging);
    lagging_seen = batches.back().sequence;
    std::set<std::string> fresh;
    Apply(log.Since(0), fresh);
    EXPECT_EQ(fresh.size(), log.cached_blocks()) << i;
    EXPECT_EQ(steady, fresh) << i;
    EXPECT_EQ(lagging, fresh) << i;
  }
}

TEST(KvEventLogTest, ListenersRunAfterEachAppendUntilRemoved) {
  KvEventLog log(16, 4);
  int calls = 0;
  // A listener may read the log: it runs without the log's lock.
  const uint64_t id = log.AddListener([&] { calls += static_cast<int>(log.Since(0).size()); });
  log.Append(1.0, {Stored("a")});
  log.Append(2.0, {});
  EXPECT_EQ(calls, 1);
  log.RemoveListener(id);
  log.Append(3.0, {Stored("b")});
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace kvd::scheduler
