// How many connections a listener holds, in all and per client address: a connection over
// either limit is turned away at accept, before it can hold a file descriptor or memory.
#pragma once

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "base/mutex.h"

namespace kvd::server {

class ConnectionLimiter {
 public:
  // 0 for either limit: none.
  ConnectionLimiter(int64_t max_connections, int64_t max_per_client)
      : max_connections_(max_connections), max_per_client_(max_per_client) {}

  // Counts a new connection from `client` (its address) unless that breaks a limit.
  [[nodiscard]] bool TryAcquire(const std::string& client);
  // Ends a connection TryAcquire admitted.
  void Release(const std::string& client);

  int64_t open() const;

 private:
  const int64_t max_connections_;
  const int64_t max_per_client_;
  mutable base::Mutex mu_;
  int64_t open_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, int64_t> per_client_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kvd::server
