// The caller's side of a document compression submitted to the scheduler: its progress, its
// result (the compressed cache) once done, and Cancel. Movable, not copyable; destroying a
// handle before the result was taken cancels the work.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cache_store/store/document_payload.h"

namespace kvd::scheduler {
namespace internal {
class CompressionChannel;
}

class CompressionHandle {
 public:
  CompressionHandle() = default;
  explicit CompressionHandle(std::shared_ptr<internal::CompressionChannel> channel);
  CompressionHandle(CompressionHandle&&) noexcept = default;
  CompressionHandle& operator=(CompressionHandle&& other) noexcept;
  ~CompressionHandle();

  // Fraction of the forward work done, in [0, 1].
  double progress() const;
  // The compressed cache or the error that ended the work, waiting up to `timeout`; nullopt
  // on timeout, and after the result was taken once.
  std::optional<absl::StatusOr<cache_store::DocumentPayload>> TakeResult(
      absl::Duration timeout = absl::InfiniteDuration());
  // Stops the work within one step and frees its blocks; the result is then Cancelled.
  void Cancel();
  // `listener` runs once on the scheduler thread when the result is ready (at once if it is).
  // It must not block; it typically hands the handle to a thread that takes the result.
  void SetListener(std::function<void()> listener);

 private:
  std::shared_ptr<internal::CompressionChannel> channel_;
};

}  // namespace kvd::scheduler
