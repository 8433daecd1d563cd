#include "server/http/connection_limiter.h"

namespace kvd::server {

bool ConnectionLimiter::TryAcquire(const std::string& client) {
  base::MutexLock lock(mu_);
  if (max_connections_ > 0 && open_ >= max_connections_) return false;
  int64_t& from_client = per_client_[client];
  if (max_per_client_ > 0 && from_client >= max_per_client_) return false;
  ++from_client;
  ++open_;
  return true;
}

void ConnectionLimiter::Release(const std::string& client) {
  base::MutexLock lock(mu_);
  const auto it = per_client_.find(client);
  if (it == per_client_.end()) return;
  --open_;
  if (--it->second == 0) per_client_.erase(it);
}

int64_t ConnectionLimiter::open() const {
  base::MutexLock lock(mu_);
  return open_;
}

}  // namespace kvd::server
