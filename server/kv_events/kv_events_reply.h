// GET /v1/kv_events: the prefix cache's KV events as server-sent events, for a router that sends
// each prompt to the replica that caches most of it (the fields of vLLM's KV event batches, as
// JSON objects; docs/api.md). Each batch is one event whose `id` is "EPOCH-N" (the log's epoch,
// the batch number), so a follower that reconnects with `Last-Event-ID` (or `?after=EPOCH-N`)
// resumes where it stopped, or starts from a snapshot when the log no longer holds what it
// missed or is another process's.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "scheduler/kv_events.h"
#include "server/http/http_message.h"

namespace kvd::server {

// One batch with the fields of vLLM's KVEventBatch as a JSON object: {"seq", "ts", "events",
// "data_parallel_rank"}, each event an object with "type" BlockStored, BlockRemoved or
// AllBlocksCleared and that event's fields; `medium` is where the blocks live ("GPU" or "CPU").
nlohmann::json KvEventBatchJson(const scheduler::KvEventBatch& batch, int32_t block_size,
                                const std::string& medium);

// The batch of `log` a request asks to follow from: `after` in the query, else the
// Last-Event-ID header, as an event id ("EPOCH-N") the stream gave; 0 (a snapshot first)
// without either, for "0", or for an id of another epoch. InvalidArgument naming the parameter
// for anything else, or for a query parameter other than `after`.
absl::StatusOr<uint64_t> KvEventsAfter(const HttpRequest& request,
                                       const scheduler::KvEventLog& log);

class KvEventsReply final : public AsyncReply {
 public:
  // `log` and `stopping` are borrowed and must outlive the reply; the stream ends once
  // `stopping` is set (the server drains).
  KvEventsReply(const scheduler::KvEventLog& log, uint64_t after, std::string medium,
                const std::atomic<bool>& stopping);
  ~KvEventsReply() override;

  bool streaming() const override { return true; }
  void SetNotify(std::function<void()> notify) override;
  ReplyProgress Poll() override;
  void Cancel() override { cancelled_ = true; }

 private:
  void RemoveListener();

  const scheduler::KvEventLog& log_;
  uint64_t after_;
  const std::string medium_;
  const std::atomic<bool>& stopping_;
  std::optional<uint64_t> listener_;
  bool cancelled_ = false;
};

}  // namespace kvd::server
