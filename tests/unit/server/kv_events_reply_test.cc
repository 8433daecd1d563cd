// GET /v1/kv_events' pieces: a batch as JSON (vLLM's fields), the position a follower resumes
// from (query, Last-Event-ID, another epoch), and the SSE a reply streams.
#include "server/kv_events/kv_events_reply.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "absl/strings/str_cat.h"
#include "server/http/error_response.h"

namespace kvd::server {
namespace {

using json = nlohmann::json;
using scheduler::KvEvent;
using scheduler::KvEventBatch;
using scheduler::KvEventLog;

const std::string kFirst(64, 'a');
const std::string kSecond(64, 'b');

TEST(KvEventBatchJsonTest, CarriesVllmsFields) {
  const KvEventBatch batch{
      .sequence = 7,
      .timestamp = 1.5,
      .events = {{.kind = KvEvent::Kind::kBlockStored, .block_hashes = {kFirst},
                  .token_ids = {1, 2}},
                 {.kind = KvEvent::Kind::kBlockStored, .block_hashes = {kSecond},
                  .parent_block_hash = kFirst, .token_ids = {3, 4}},
                 {.kind = KvEvent::Kind::kBlockRemoved, .block_hashes = {kFirst}},
                 {.kind = KvEvent::Kind::kAllBlocksCleared}}};
  const json expected = json::parse(absl::StrCat(R"({"seq": 7, "ts": 1.5, "data_parallel_rank": null, "events": [
    {"type": "BlockStored", "block_hashes": [")", kFirst, R"("], "parent_block_hash": null,
     "token_ids": [1, 2], "block_size": 2, "lora_id": null, "medium": "GPU"},
    {"type": "BlockStored", "block_hashes": [")", kSecond, R"("], "parent_block_hash": ")",
                                                  kFirst, R"(",
     "token_ids": [3, 4], "block_size": 2, "lora_id": null, "medium": "GPU"},
    {"type": "BlockRemoved", "block_hashes": [")", kFirst, R"("], "medium": "GPU"},
    {"type": "AllBlocksCleared"}]})"));
  EXPECT_EQ(KvEventBatchJson(batch, 2, "GPU"), expected);
}

HttpRequest Get(const std::string& query, const std::string& last_event_id = "") {
  HttpRequest request{.method = "GET", .path = "/v1/kv_events", .query = query};
  if (!last_event_id.empty()) request.headers["last-event-id"] = last_event_id;
  return request;
}

TEST(KvEventsAfterTest, ResumesFromAnIdOfThisLogAndStartsOverFromAnyOther) {
  const KvEventLog log(16, 8);
  const std::string id = absl::StrCat(log.epoch(), "-5");
  EXPECT_EQ(*KvEventsAfter(Get(""), log), 0u);
  EXPECT_EQ(*KvEventsAfter(Get("after=0"), log), 0u);
  EXPECT_EQ(*KvEventsAfter(Get("after=" + id), log), 5u);
  EXPECT_EQ(*KvEventsAfter(Get("", id), log), 5u);
  // The query wins over the header.
  EXPECT_EQ(*KvEventsAfter(Get("after=0", id), log), 0u);
  // Another process's ids (a restart) start over with a snapshot.
  const std::string other = absl::StrCat(log.epoch() + 1, "-5");
  EXPECT_EQ(*KvEventsAfter(Get("", other), log), 0u);

  for (const auto& [query, header, param] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"after=5", "", "after"},
           {"after=x-1", "", "after"},
           {"after=-1", "", "after"},
           {"after=1-2-3", "", "after"},
           {"after=" + id + "&since=1", "", "since"},
           {"since=1&after=" + id, "", "since"},
           {"", "12", "Last-Event-ID"},
           {"", "1-99999999999999999999999", "Last-Event-ID"}}) {
    const absl::StatusOr<uint64_t> after = KvEventsAfter(Get(query, header), log);
    ASSERT_FALSE(after.ok()) << query << header;
    EXPECT_EQ(HttpStatusFor(after.status()), 400);
    EXPECT_EQ(json::parse(ErrorJson(after.status()))["error"]["param"], param) << query << header;
  }
}

TEST(KvEventsReplyTest, StreamsEachBatchOnceWithItsIdAndEndsWhenStopping) {
  KvEventLog log(16, 8);
  std::atomic<bool> stopping = false;
  KvEventsReply reply(log, 0, "CPU", stopping);
  EXPECT_TRUE(reply.streaming());
  int notified = 0;
  reply.SetNotify([&] { ++notified; });
  EXPECT_EQ(reply.Poll().stream_data, "");
  log.Append(1.0, {{.kind = KvEvent::Kind::kBlockStored, .block_hashes = {kFirst},
                    .token_ids = {1}}});
  EXPECT_EQ(notified, 1);
  const std::string data = reply.Poll().stream_data;
  EXPECT_EQ(data.rfind(absl::StrCat("id: ", log.epoch(), "-1\ndata: {"), 0), 0u) << data;
  EXPECT_EQ(data.substr(data.size() - 2), "\n\n");
  EXPECT_EQ(reply.Poll().stream_data, "");
  reply.SetNotify(nullptr);
  log.Append(2.0, {{.kind = KvEvent::Kind::kBlockRemoved, .block_hashes = {kFirst}}});
  EXPECT_EQ(notified, 1);
  stopping = true;
  EXPECT_TRUE(reply.Poll().done);
}

}  // namespace
}  // namespace kvd::server
