// A token bucket: `capacity` units refilled continuously over a minute, for requests-per-minute
// and tokens-per-minute limits. Not thread-safe; its owner locks.
#pragma once

#include <optional>

#include "absl/time/time.h"

namespace kvd::server {

class TokenBucket {
 public:
  // `per_minute` units per minute, the bucket's capacity too; 0 means unlimited.
  TokenBucket(double per_minute, absl::Time now);

  // Takes `amount` if the bucket holds it at `now`; otherwise takes nothing and returns how
  // long until it would: absl::InfiniteDuration() for an amount beyond the capacity, which
  // no wait makes the bucket hold.
  std::optional<absl::Duration> TryTake(double amount, absl::Time now);
  // Units per minute and the most the bucket holds; 0 means unlimited.
  double capacity() const { return capacity_; }
  // Returns unused units (up to the capacity).
  void Refund(double amount, absl::Time now);
  // Changes the rate (and capacity), keeping what the bucket holds up to the new capacity; a
  // bucket that was unlimited starts full.
  void Resize(double per_minute, absl::Time now);

 private:
  void Refill(absl::Time now);

  double capacity_;
  double level_;
  absl::Time updated_;
};

}  // namespace kvd::server
