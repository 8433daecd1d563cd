// A few connections to one Redis, each lent to one call at a time, with every call's count and
// latency; after a call waited out its timeout, calls fail at once for a second, so that a
// partition costs each request one fast failure rather than a connect timeout. The shared
// tier's stores (documents, stored responses) each run their commands through one.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/histogram.h"
#include "base/mutex.h"
#include "cache_store/store/redis_connection.h"

namespace kvd::cache_store {

struct RedisPoolOptions {
  RedisEndpoint endpoint;
  // Bound on connecting and on each round trip; past it a call is Unavailable. Default 2 s.
  absl::Duration timeout = absl::Seconds(2);
  // Connections kept open between calls. Default 4.
  int idle_connections = 4;
};

// Upper bounds of RedisCallStats::seconds' buckets.
std::vector<double> RemoteLatencyBuckets();

struct RedisCallStats {
  int64_t reads = 0;                // calls that read
  int64_t writes = 0;               // calls that write
  int64_t failures = 0;             // calls that could not reach Redis or were refused by it
  base::HistogramSnapshot seconds;  // each call's latency
};

// Redis's answer when it is not a reply the call expects. Refusals a retry may get past (the
// server loading, busy, out of memory, read-only, or the credentials) are Unavailable; anything
// else (a key of another type, a reply of the wrong shape) means the data is not what kvd
// wrote: DataLoss.
absl::Status RedisRefused(const RedisReply& reply, absl::string_view doing);

class RedisPool {
 public:
  enum class Call { kRead, kWrite };

  // Connects lazily: a Redis that is down at start is an error of the first call, not of this.
  explicit RedisPool(RedisPoolOptions options);
  RedisPool(const RedisPool&) = delete;
  RedisPool& operator=(const RedisPool&) = delete;

  const RedisPoolOptions& options() const { return options_; }

  // Runs `commands` in one round trip on a pooled connection (RedisConnection::Pipeline);
  // counts the call and its latency.
  [[nodiscard]] absl::StatusOr<std::vector<RedisReply>> Run(
      Call call, const std::vector<std::vector<std::string>>& commands);
  // Counts a call that reached Redis but was refused (a kError reply among its replies).
  void CountRefusal();

  RedisCallStats Stats() const;

 private:
  const RedisPoolOptions options_;
  base::Mutex mu_;
  std::vector<std::unique_ptr<RedisConnection>> idle_ ABSL_GUARDED_BY(mu_);
  mutable base::Mutex stats_mu_;
  RedisCallStats stats_ ABSL_GUARDED_BY(stats_mu_);
  // Until when calls fail at once: set by a call that could not reach Redis.
  absl::Time unreachable_until_ ABSL_GUARDED_BY(stats_mu_) = absl::InfinitePast();
  base::Histogram seconds_ ABSL_GUARDED_BY(stats_mu_);
};

}  // namespace kvd::cache_store
