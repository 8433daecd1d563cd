// The state a document compression shares between the scheduler thread (progress, result) and
// the holder of its CompressionHandle (reads, cancel). Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "cache_store/store/document_payload.h"
#include "scheduler/internal/wakeup.h"

namespace kvd::scheduler::internal {

class CompressionChannel {
 public:
  explicit CompressionChannel(std::shared_ptr<Wakeup> wakeup) : wakeup_(std::move(wakeup)) {}

  // Thread: scheduler.
  void SetProgress(double progress) { progress_.store(progress, std::memory_order_relaxed); }
  // Thread: scheduler. Stores the result and tells the listener; later calls are ignored.
  void Finish(absl::StatusOr<cache_store::DocumentPayload> result);
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

  // Thread: any.
  double progress() const { return progress_.load(std::memory_order_relaxed); }
  std::optional<absl::StatusOr<cache_store::DocumentPayload>> TakeResult(absl::Duration timeout);
  void Cancel();
  bool taken() const;
  void SetListener(std::function<void()> listener);

 private:
  const std::shared_ptr<Wakeup> wakeup_;
  std::atomic<double> progress_ = 0.0;
  std::atomic<bool> cancelled_ = false;
  mutable base::Mutex mu_;
  std::condition_variable cv_;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool taken_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<absl::StatusOr<cache_store::DocumentPayload>> result_ ABSL_GUARDED_BY(mu_);
  std::function<void()> listener_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kvd::scheduler::internal
