// Publishes the scheduler's KV events over ZeroMQ as vLLM does, for routers built for vLLM's
// stream (llm-d's precise prefix-cache scorer): each batch is one PUB message of three frames
// (the topic, the batch number as 8 bytes big-endian, the batch in vLLM's msgpack form), and an
// optional ROUTER socket answers replays. A replay request is a REQ-style message whose last
// frame is the first batch number wanted (8 bytes, big-endian); the answer is every batch from
// that one on (one snapshot batch, numbered as the latest, from batch 0 or 1 or when the log no
// longer holds them), each as [number, batch], then [0xFF x 8, empty]; a peer that reads too
// slowly gets no end and asks again. Anything else a peer sends is dropped. One thread owns
// both sockets.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/kv_events.h"

namespace kvd::server {

struct ZmqKvEventsOptions {
  // PUB endpoint. As vLLM decides: bound when it holds a wildcard ("tcp://*:5557",
  // "tcp://127.0.0.1:*"), "::", or is ipc:// or inproc://; otherwise connected, to a subscriber
  // that binds (llm-d's centralized mode).
  std::string endpoint;
  std::string replay_endpoint;  // ROUTER endpoint, always bound; "" for none
  std::string topic;            // the first frame of every message
  std::string medium = "CPU";   // where the blocks live, as the events name it
};

class ZmqKvEventPublisher {
 public:
  // Binds or connects the sockets (an error names the endpoint and ZeroMQ's reason) and starts
  // the thread that follows `log`, which must outlive the publisher.
  static absl::StatusOr<std::unique_ptr<ZmqKvEventPublisher>> Start(
      const scheduler::KvEventLog& log, ZmqKvEventsOptions options);
  ZmqKvEventPublisher(const ZmqKvEventPublisher&) = delete;
  ZmqKvEventPublisher& operator=(const ZmqKvEventPublisher&) = delete;
  // Stops the thread and closes the sockets.
  ~ZmqKvEventPublisher();

  // The endpoints as bound (a wildcard port resolved: "tcp://127.0.0.1:40123"); the PUB one as
  // given when it connects; "" for no replay socket.
  const std::string& endpoint() const { return endpoint_; }
  const std::string& replay_endpoint() const { return replay_endpoint_; }

 private:
  class Wake;  // an eventfd the log's listener writes and the thread polls
  ZmqKvEventPublisher(const scheduler::KvEventLog& log, ZmqKvEventsOptions options);
  absl::Status Open();
  void Run();
  // Sends every batch after the last one published.
  void PublishNew();
  // Answers the replay requests waiting on the ROUTER socket, a few at a time.
  void ServeReplays();
  struct EncodedBatch {
    std::string number;   // 8 bytes, big-endian
    std::string payload;  // vLLM's msgpack form
  };
  // What a replay from batch `first` sends: the batches themselves while the log holds them,
  // else one snapshot.
  std::vector<EncodedBatch> ReplayFrom(uint64_t first);
  EncodedBatch Encode(const scheduler::KvEventBatch& batch) const;

  const scheduler::KvEventLog& log_;
  const ZmqKvEventsOptions options_;
  std::shared_ptr<Wake> wake_;  // shared with the listener, which may outlive RemoveListener
  void* context_ = nullptr;
  void* pub_ = nullptr;
  void* replay_ = nullptr;
  std::string endpoint_, replay_endpoint_;
  uint64_t listener_ = 0;
  uint64_t published_ = 0;  // the number of the last batch sent; the thread's
  // The latest snapshot replayed, by the number of the batch it stands for; the thread's.
  std::optional<std::pair<uint64_t, EncodedBatch>> snapshot_;
  std::atomic<bool> stopping_ = false;
  std::thread thread_;
};

}  // namespace kvd::server
