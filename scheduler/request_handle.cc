#include "scheduler/request_handle.h"

#include "scheduler/internal/request_channel.h"

namespace kvd::scheduler {

RequestHandle::RequestHandle(std::shared_ptr<internal::RequestChannel> channel)
    : channel_(std::move(channel)) {}

RequestHandle& RequestHandle::operator=(RequestHandle&& other) noexcept {
  if (this != &other) {
    if (channel_ && !channel_->finished()) channel_->Cancel();
    channel_ = std::move(other.channel_);
  }
  return *this;
}

RequestHandle::~RequestHandle() {
  if (channel_ && !channel_->finished()) channel_->Cancel();
}

uint64_t RequestHandle::id() const { return channel_->id(); }

std::optional<Event> RequestHandle::Next(absl::Duration timeout) { return channel_->Next(timeout); }

void RequestHandle::Cancel() { channel_->Cancel(); }

bool RequestHandle::finished() const { return channel_->finished(); }

void RequestHandle::SetListener(std::function<void()> listener) {
  channel_->SetListener(std::move(listener));
}

}  // namespace kvd::scheduler
