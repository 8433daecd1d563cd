// The caller's side of a submitted request: a stream of Events to drain, and Cancel. Movable,
// not copyable; destroying a handle whose stream has not ended cancels the request.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "absl/time/time.h"
#include "scheduler/request.h"

namespace kvd::scheduler {
namespace internal {
class RequestChannel;
}

class RequestHandle {
 public:
  RequestHandle() = default;
  explicit RequestHandle(std::shared_ptr<internal::RequestChannel> channel);
  RequestHandle(RequestHandle&&) noexcept = default;
  RequestHandle& operator=(RequestHandle&& other) noexcept;
  ~RequestHandle();

  // Unique per scheduler, in submission order.
  uint64_t id() const;
  // The next event, waiting up to `timeout`; nullopt on timeout and after the final event.
  std::optional<Event> Next(absl::Duration timeout = absl::InfiniteDuration());
  // Stops the request: its sequences leave the batch and free their KV blocks within one step;
  // unfinished choices end with FinishReason::kAbort, then the final event.
  void Cancel();
  // True once the final event was taken.
  bool finished() const;
  // For asynchronous consumers: `listener` runs on the scheduler thread whenever events arrive
  // (and at once if some are waiting). It must not block; it typically posts a read.
  void SetListener(std::function<void()> listener);

 private:
  std::shared_ptr<internal::RequestChannel> channel_;
};

}  // namespace kvd::scheduler
