// The serving scheduler: many requests from many tenants, one scheduler thread that runs them in
// continuous batches over the paged KV cache. I/O threads Submit and read their RequestHandle;
// only the scheduler thread touches the model, the KV pool and the batch.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "cache_store/kvzip/document_compressor.h"
#include "engine/model.h"
#include "scheduler/clock.h"
#include "scheduler/compression_handle.h"
#include "scheduler/config.h"
#include "scheduler/kv_events.h"
#include "scheduler/metrics.h"
#include "scheduler/progress_watch.h"
#include "scheduler/request.h"
#include "scheduler/request_handle.h"
#include "scheduler/step_report.h"
#include "text/tokenizer.h"

namespace kvd::scheduler {
namespace internal {
class StepLoop;
class CompressionChannel;
class Wakeup;
struct RequestState;
}  // namespace internal

class Scheduler {
 public:
  // Creates the KV pool on the model's backend. `model`, `tokenizer` (null: no text, no stop
  // strings) and `clock` are borrowed and must outlive the scheduler.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Scheduler>> Create(
      engine::Model& model, const text::Tokenizer* tokenizer, const SchedulerConfig& config,
      const Clock& clock = Clock::System());
  ~Scheduler();  // Stop()

  // Thread-safe. Checks the request and queues it. Errors: InvalidArgument (a bad request,
  // a prompt beyond the context or beyond what the KV cache can ever hold), ResourceExhausted
  // (the tenant's queue is full), Unavailable (the global queue is full, or stopping).
  [[nodiscard]] absl::StatusOr<RequestHandle> Submit(Request request);

  // Thread-safe. Queues a document compression, which runs in the steps beside the requests.
  // Errors: InvalidArgument (it needs more KV blocks than the cache has), Unavailable
  // (stopping).
  [[nodiscard]] absl::StatusOr<CompressionHandle> SubmitCompression(
      std::unique_ptr<cache_store::DocumentCompressor> compressor);

  // Starts the scheduler thread, which steps whenever there is work.
  void Start();
  // Stops taking requests, ends the unfinished ones with Unavailable, joins the thread.
  void Stop();

  // Runs one step on the calling thread, for a caller that drives the scheduler itself
  // (tests, benchmarks, `kvd generate`) and never calls Start.
  [[nodiscard]] absl::StatusOr<StepReport> Step();
  // Whether Step has anything to do. Same thread as Step.
  bool HasWork();

  MetricsSnapshot Metrics() const;
  // Thread-safe. How long the scheduler thread has had work without completing a step; zero
  // while it has none, and always zero without Start.
  absl::Duration StalledFor() const { return progress_.Stalled(); }
  // The prefix cache's KV events; null unless prefix_cache.enabled and kv_events are on.
  // Thread-safe.
  const KvEventLog* kv_events() const { return kv_events_.get(); }
  const SchedulerConfig& config() const { return config_; }
  // The longest sequence the KV cache can hold, in tokens.
  int32_t max_sequence_tokens() const { return max_sequence_tokens_; }

 private:
  Scheduler(engine::Model& model, const text::Tokenizer* tokenizer, const SchedulerConfig& config,
            const Clock& clock, int32_t max_sequence_tokens);
  absl::Status Validate(const Request& request) const;
  // Thread: scheduler. Moves submitted requests into the step loop.
  void DrainInbox();
  void Run();
  void OnDequeued(const internal::RequestState& request);

  engine::Model& model_;
  const text::Tokenizer* tokenizer_;
  const SchedulerConfig config_;
  const Clock& clock_;
  const int32_t max_sequence_tokens_;
  SchedulerMetrics metrics_;
  ProgressWatch progress_;
  const std::unique_ptr<KvEventLog> kv_events_;  // before step_loop_, which appends to it
  std::shared_ptr<internal::Wakeup> wakeup_;
  std::unique_ptr<engine::Model> draft_model_;     // speculative decoding's; null without
  std::unique_ptr<internal::StepLoop> step_loop_;  // Thread: scheduler
  std::thread thread_;

  mutable base::Mutex mu_;
  std::vector<std::shared_ptr<internal::RequestState>> inbox_ ABSL_GUARDED_BY(mu_);
  struct PendingCompression {
    std::unique_ptr<cache_store::DocumentCompressor> compressor;
    std::shared_ptr<internal::CompressionChannel> channel;
  };
  std::vector<PendingCompression> compression_inbox_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int32_t> queued_by_tenant_ ABSL_GUARDED_BY(mu_);
  int32_t queued_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace kvd::scheduler
