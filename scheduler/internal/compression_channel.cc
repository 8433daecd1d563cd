#include "scheduler/internal/compression_channel.h"

#include <utility>

#include "base/mutex.h"

namespace kvd::scheduler::internal {

void CompressionChannel::Finish(absl::StatusOr<cache_store::DocumentPayload> result) {
  std::function<void()> listener;
  {
    base::MutexLock lock(mu_);
    if (finished_) return;
    finished_ = true;
    if (result.ok()) progress_.store(1.0, std::memory_order_relaxed);
    result_ = std::move(result);
    listener = listener_;
  }
  cv_.notify_all();
  if (listener) listener();
}

std::optional<absl::StatusOr<cache_store::DocumentPayload>> CompressionChannel::TakeResult(
    absl::Duration timeout) {
  base::MutexLock lock(mu_);
  const absl::Time deadline = absl::Now() + timeout;  // infinite stays infinite
  while (!finished_) {
    if (!lock.WaitUntil(cv_, deadline) && !finished_) return std::nullopt;
  }
  if (taken_) return std::nullopt;
  taken_ = true;
  auto result = std::move(result_);
  result_.reset();
  return result;
}

void CompressionChannel::Cancel() {
  cancelled_.store(true, std::memory_order_release);
  wakeup_->Notify();
}

bool CompressionChannel::taken() const {
  base::MutexLock lock(mu_);
  return taken_;
}

void CompressionChannel::SetListener(std::function<void()> listener) {
  bool finished;
  {
    base::MutexLock lock(mu_);
    listener_ = listener;
    finished = finished_;
  }
  if (finished && listener) listener();
}

}  // namespace kvd::scheduler::internal
