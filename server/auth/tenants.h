// Who is calling: API keys (SHA-256 digests, compared in constant time) to tenants, and each
// tenant's admission limits — concurrent requests, requests and tokens per minute — enforced
// before a request reaches the scheduler. With no tenants configured, authentication is off and
// one default tenant serves everyone.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "scheduler/clock.h"
#include "scheduler/request.h"
#include "server/auth/token_bucket.h"
#include "server/config/server_config.h"

namespace kvd::server {

// Why a request was refused before reaching the scheduler.
enum class Refusal { kNone, kConcurrency, kRequestRate, kTokenRate };

class Tenant;

// A request's hold on its tenant's limits: one concurrent slot and the tokens it was charged
// (prompt plus max_tokens). Releases the slot when destroyed; Settle refunds the tokens the
// request did not use (all of them when it never ran).
class TenantPermit {
 public:
  TenantPermit(std::shared_ptr<Tenant> tenant, int64_t charged_tokens);
  TenantPermit(const TenantPermit&) = delete;
  TenantPermit& operator=(const TenantPermit&) = delete;
  ~TenantPermit();
  void Settle(int64_t used_tokens);

 private:
  std::shared_ptr<Tenant> tenant_;
  int64_t charged_tokens_;
  bool settled_ = false;
};

class Tenant : public std::enable_shared_from_this<Tenant> {
 public:
  Tenant(const TenantConfig& config, const scheduler::Clock& clock);

  // Takes new limits and policy (a configuration reload), keeping requests in flight and what
  // the rate buckets hold.
  void Reconfigure(const TenantConfig& config);

  const std::string& id() const { return id_; }
  // What the scheduler needs: weight and its own limits.
  scheduler::TenantPolicy policy();
  int32_t priority();
  // Its own document limits (TenantConfig::max_documents, max_stored_bytes); 0: the server's.
  int64_t max_documents();
  int64_t max_stored_bytes();
  // Its KeepKV defaults (TenantConfig::keepkv: the server's section under its own keys).
  KeepKvConfig keepkv();
  // Tokens it may use a minute (TenantConfig::tokens_per_minute); 0: unlimited.
  int64_t tokens_per_minute();

  // Takes a concurrent slot, one request and `tokens` (prompt plus max_tokens) from the
  // tenant's limits, or refuses with ResourceExhausted carrying Retry-After; `refusal` says
  // which limit. A request charged more than a per-minute limit holds at all (`tokens` over
  // tokens_per_minute) would never be admitted: InvalidArgument with code
  // request_exceeds_limit, naming the limit, and refusal kTokenRate.
  absl::StatusOr<std::unique_ptr<TenantPermit>> Admit(int64_t tokens, Refusal& refusal);

 private:
  friend class TenantPermit;
  void Release();

  const scheduler::Clock& clock_;
  const std::string id_;
  base::Mutex mu_;
  scheduler::TenantPolicy policy_ ABSL_GUARDED_BY(mu_);
  int32_t priority_ ABSL_GUARDED_BY(mu_);
  int32_t max_concurrent_ ABSL_GUARDED_BY(mu_);
  int64_t max_documents_ ABSL_GUARDED_BY(mu_);
  int64_t max_stored_bytes_ ABSL_GUARDED_BY(mu_);
  KeepKvConfig keepkv_ ABSL_GUARDED_BY(mu_);
  int32_t concurrent_ ABSL_GUARDED_BY(mu_) = 0;
  TokenBucket requests_bucket_ ABSL_GUARDED_BY(mu_);
  TokenBucket tokens_bucket_ ABSL_GUARDED_BY(mu_);
};

class TenantRegistry {
 public:
  // `clock` is borrowed. Keys are the configs' SHA-256 digests. Tenants that `previous` (a
  // registry being replaced) already had keep their state: requests in flight and rate buckets.
  // With no tenants, the default tenant takes `keepkv` (the server's section).
  TenantRegistry(const std::vector<TenantConfig>& tenants, const scheduler::Clock& clock,
                 const TenantRegistry* previous = nullptr, const KeepKvConfig& keepkv = {});

  bool authentication_enabled() const { return !keys_.empty(); }
  // The tenant of an `Authorization: Bearer <key>` header value; Unauthenticated when the
  // header is missing or malformed or the key unknown. Without tenants: the default tenant.
  absl::StatusOr<std::shared_ptr<Tenant>> Authenticate(std::string_view authorization) const;
  std::vector<std::string> tenant_ids() const;

 private:
  struct Key {
    std::string digest;
    std::shared_ptr<Tenant> tenant;
  };
  std::vector<Key> keys_;
  std::vector<std::shared_ptr<Tenant>> tenants_;
  std::shared_ptr<Tenant> default_tenant_;
};

// The registry in force, replaced whole on a configuration reload while requests use the old.
class TenantDirectory {
 public:
  explicit TenantDirectory(std::shared_ptr<const TenantRegistry> registry)
      : registry_(std::move(registry)) {}
  std::shared_ptr<const TenantRegistry> current() const {
    base::MutexLock lock(mu_);
    return registry_;
  }
  void Replace(std::shared_ptr<const TenantRegistry> registry) {
    base::MutexLock lock(mu_);
    registry_ = std::move(registry);
  }

 private:
  mutable base::Mutex mu_;
  std::shared_ptr<const TenantRegistry> registry_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kvd::server
