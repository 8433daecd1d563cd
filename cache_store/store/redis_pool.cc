#include "cache_store/store/redis_pool.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace kvd::cache_store {
namespace {

// How long calls fail at once after one could not reach Redis.
constexpr absl::Duration kFailFast = absl::Seconds(1);

}  // namespace

std::vector<double> RemoteLatencyBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};
}

absl::Status RedisRefused(const RedisReply& reply, absl::string_view doing) {
  static constexpr absl::string_view kTransient[] = {
      "LOADING", "BUSY",     "OOM",      "NOAUTH",     "WRONGPASS",   "NOPERM",
      "READONLY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "MISCONF", "NOSCRIPT"};
  if (reply.type == RedisReply::Type::kError) {
    for (absl::string_view prefix : kTransient) {
      if (absl::StartsWith(reply.text, prefix)) {
        return absl::UnavailableError(absl::StrCat("Redis refused ", doing, ": ", reply.text));
      }
    }
    return absl::DataLossError(absl::StrCat("Redis refused ", doing, ": ", reply.text));
  }
  return absl::DataLossError(absl::StrCat("Redis answered ", doing, " with an unexpected reply"));
}

RedisPool::RedisPool(RedisPoolOptions options)
    : options_(std::move(options)), seconds_(RemoteLatencyBuckets()) {}

absl::StatusOr<std::vector<RedisReply>> RedisPool::Run(
    Call call, const std::vector<std::vector<std::string>>& commands) {
  std::unique_ptr<RedisConnection> connection;
  {
    base::MutexLock lock(mu_);
    if (!idle_.empty()) {
      connection = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (connection == nullptr) {
    connection = std::make_unique<RedisConnection>(options_.endpoint, options_.timeout);
  }
  const absl::Time start = absl::Now();
  bool fail_fast;
  {
    base::MutexLock lock(stats_mu_);
    fail_fast = start < unreachable_until_;
  }
  absl::StatusOr<std::vector<RedisReply>> replies =
      fail_fast ? absl::UnavailableError(absl::StrCat(
                      "Redis did not answer a call within the timeout in the last ",
                      absl::FormatDuration(kFailFast), "; not trying again yet"))
                : connection->Pipeline(commands);
  {
    base::MutexLock lock(stats_mu_);
    ++(call == Call::kRead ? stats_.reads : stats_.writes);
    const absl::Duration took = absl::Now() - start;
    seconds_.Observe(absl::ToDoubleSeconds(took));
    if (!replies.ok()) ++stats_.failures;
    // Only a call that waited (a timeout, not a refused connection) opens the window.
    if (!replies.ok() && took >= options_.timeout / 2) {
      unreachable_until_ = std::max(unreachable_until_, absl::Now() + kFailFast);
    }
  }
  base::MutexLock lock(mu_);
  if (static_cast<int>(idle_.size()) < options_.idle_connections) {
    idle_.push_back(std::move(connection));
  }
  return replies;
}

void RedisPool::CountRefusal() {
  base::MutexLock lock(stats_mu_);
  ++stats_.failures;
}

RedisCallStats RedisPool::Stats() const {
  base::MutexLock lock(stats_mu_);
  RedisCallStats stats = stats_;
  stats.seconds = seconds_.snapshot();
  return stats;
}

}  // namespace kvd::cache_store
