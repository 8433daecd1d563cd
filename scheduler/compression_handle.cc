#include "scheduler/compression_handle.h"

#include <utility>

#include "scheduler/internal/compression_channel.h"

namespace kvd::scheduler {

CompressionHandle::CompressionHandle(std::shared_ptr<internal::CompressionChannel> channel)
    : channel_(std::move(channel)) {}

CompressionHandle& CompressionHandle::operator=(CompressionHandle&& other) noexcept {
  if (this != &other) {
    if (channel_ != nullptr && !channel_->taken()) channel_->Cancel();
    channel_ = std::move(other.channel_);
  }
  return *this;
}

CompressionHandle::~CompressionHandle() {
  if (channel_ != nullptr && !channel_->taken()) channel_->Cancel();
}

double CompressionHandle::progress() const { return channel_->progress(); }

std::optional<absl::StatusOr<cache_store::DocumentPayload>> CompressionHandle::TakeResult(
    absl::Duration timeout) {
  return channel_->TakeResult(timeout);
}

void CompressionHandle::Cancel() { channel_->Cancel(); }

void CompressionHandle::SetListener(std::function<void()> listener) {
  channel_->SetListener(std::move(listener));
}

}  // namespace kvd::scheduler
