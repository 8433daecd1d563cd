#include "server/auth/token_bucket.h"

#include <algorithm>

namespace kvd::server {

TokenBucket::TokenBucket(double per_minute, absl::Time now)
    : capacity_(per_minute), level_(per_minute), updated_(now) {}

void TokenBucket::Refill(absl::Time now) {
  if (now <= updated_) return;
  const double elapsed_minutes = absl::ToDoubleSeconds(now - updated_) / 60.0;
  level_ = std::min(capacity_, level_ + elapsed_minutes * capacity_);
  updated_ = now;
}

std::optional<absl::Duration> TokenBucket::TryTake(double amount, absl::Time now) {
  if (capacity_ <= 0.0) return std::nullopt;
  if (amount > capacity_) return absl::InfiniteDuration();
  Refill(now);
  if (level_ >= amount) {
    level_ -= amount;
    return std::nullopt;
  }
  return absl::Seconds((amount - level_) / capacity_ * 60.0);
}

void TokenBucket::Refund(double amount, absl::Time now) {
  if (capacity_ <= 0.0) return;
  Refill(now);
  level_ = std::min(capacity_, level_ + amount);
}

void TokenBucket::Resize(double per_minute, absl::Time now) {
  Refill(now);
  level_ = capacity_ <= 0.0 ? per_minute : std::min(level_, per_minute);
  capacity_ = per_minute;
  updated_ = now;
}

}  // namespace kvd::server
