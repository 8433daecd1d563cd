#include "server/auth/tenants.h"

#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/mutex.h"
#include "base/sha256.h"
#include "server/config/api_key.h"
#include "server/http/error_response.h"

namespace kvd::server {
namespace {

// One of a tenant's per-minute buckets, as its refusals name it.
struct RateLimit {
  std::string_view name;    // "tokens-per-minute"
  std::string_view key;     // its key in the tenant's config
  std::string_view unit;    // what a request is charged in
  std::string_view remedy;  // how a request over the whole limit can fit
};

constexpr RateLimit kTokenLimit{"tokens-per-minute", "tokens_per_minute", "tokens",
                                "send a shorter prompt or a lower max_tokens (charged for each "
                                "of the n completions)"};
constexpr RateLimit kRequestLimit{"requests-per-minute", "requests_per_minute", "requests",
                                  "send fewer at once"};

// A bucket's refusal of `amount`: 429 with Retry-After when waiting admits the request; 400
// when the request alone needs more than the bucket ever holds, so that no retry can succeed.
absl::Status Refuse(const std::string& tenant, const RateLimit& limit, int64_t amount,
                    const TokenBucket& bucket, absl::Duration wait) {
  if (wait == absl::InfiniteDuration()) {
    return WithErrorCode(absl::InvalidArgumentError(absl::StrCat(
                             "this request is charged ", amount, " ", std::string(limit.unit),
                             ", more than tenant '", tenant, "' may use in a minute (",
                             std::string(limit.key), ": ", static_cast<int64_t>(bucket.capacity()),
                             "), so it can never be admitted; ", std::string(limit.remedy))),
                         "request_exceeds_limit");
  }
  const int seconds = std::max(1, static_cast<int>(std::ceil(absl::ToDoubleSeconds(wait))));
  return WithRetryAfter(
      WithErrorCode(absl::ResourceExhaustedError(
                        absl::StrCat("tenant '", tenant, "' is over its ", std::string(limit.name),
                                     " limit; retry after ", seconds, " s")),
                    "rate_limit_exceeded"),
      seconds);
}

}  // namespace

TenantPermit::TenantPermit(std::shared_ptr<Tenant> tenant, int64_t charged_tokens)
    : tenant_(std::move(tenant)), charged_tokens_(charged_tokens) {}

TenantPermit::~TenantPermit() { tenant_->Release(); }

void TenantPermit::Settle(int64_t used_tokens) {
  if (settled_) return;
  settled_ = true;
  const int64_t unused = charged_tokens_ - used_tokens;
  if (unused > 0) {
    base::MutexLock lock(tenant_->mu_);
    tenant_->tokens_bucket_.Refund(static_cast<double>(unused), tenant_->clock_.Now());
  }
}

Tenant::Tenant(const TenantConfig& config, const scheduler::Clock& clock)
    : clock_(clock),
      id_(config.id),
      policy_(config.Policy()),
      priority_(config.priority),
      max_concurrent_(config.max_concurrent_requests),
      max_documents_(config.max_documents),
      max_stored_bytes_(static_cast<int64_t>(config.max_stored_bytes)),
      keepkv_(config.keepkv),
      requests_bucket_(config.requests_per_minute, clock.Now()),
      tokens_bucket_(config.tokens_per_minute, clock.Now()) {}

void Tenant::Reconfigure(const TenantConfig& config) {
  base::MutexLock lock(mu_);
  const absl::Time now = clock_.Now();
  policy_ = config.Policy();
  priority_ = config.priority;
  max_concurrent_ = config.max_concurrent_requests;
  max_documents_ = config.max_documents;
  max_stored_bytes_ = static_cast<int64_t>(config.max_stored_bytes);
  keepkv_ = config.keepkv;
  requests_bucket_.Resize(config.requests_per_minute, now);
  tokens_bucket_.Resize(static_cast<double>(config.tokens_per_minute), now);
}

scheduler::TenantPolicy Tenant::policy() {
  base::MutexLock lock(mu_);
  return policy_;
}

int32_t Tenant::priority() {
  base::MutexLock lock(mu_);
  return priority_;
}

int64_t Tenant::max_documents() {
  base::MutexLock lock(mu_);
  return max_documents_;
}

int64_t Tenant::max_stored_bytes() {
  base::MutexLock lock(mu_);
  return max_stored_bytes_;
}

KeepKvConfig Tenant::keepkv() {
  base::MutexLock lock(mu_);
  return keepkv_;
}

int64_t Tenant::tokens_per_minute() {
  base::MutexLock lock(mu_);
  return static_cast<int64_t>(tokens_bucket_.capacity());
}

absl::StatusOr<std::unique_ptr<TenantPermit>> Tenant::Admit(int64_t tokens, Refusal& refusal) {
  base::MutexLock lock(mu_);
  const absl::Time now = clock_.Now();
  refusal = Refusal::kNone;
  if (max_concurrent_ > 0 && concurrent_ >= max_concurrent_) {
    refusal = Refusal::kConcurrency;
    return WithRetryAfter(WithErrorCode(absl::ResourceExhaustedError(absl::StrCat(
                                            "tenant '", id_, "' already has ", concurrent_,
                                            " requests in flight, its limit")),
                                        "rate_limit_exceeded"),
                          1);
  }
  // Tokens first: a refusal there must not consume a request.
  TokenBucket tokens_probe = tokens_bucket_;
  if (auto wait = tokens_probe.TryTake(static_cast<double>(tokens), now)) {
    refusal = Refusal::kTokenRate;
    return Refuse(id_, kTokenLimit, tokens, tokens_bucket_, *wait);
  }
  if (auto wait = requests_bucket_.TryTake(1.0, now)) {
    refusal = Refusal::kRequestRate;
    return Refuse(id_, kRequestLimit, 1, requests_bucket_, *wait);
  }
  tokens_bucket_ = tokens_probe;
  ++concurrent_;
  return std::make_unique<TenantPermit>(shared_from_this(), tokens);
}

void Tenant::Release() {
  base::MutexLock lock(mu_);
  --concurrent_;
}

TenantRegistry::TenantRegistry(const std::vector<TenantConfig>& tenants,
                               const scheduler::Clock& clock, const TenantRegistry* previous,
                               const KeepKvConfig& keepkv) {
  for (const TenantConfig& config : tenants) {
    std::shared_ptr<Tenant> tenant;
    if (previous != nullptr) {
      for (const auto& existing : previous->tenants_) {
        if (existing->id() == config.id) tenant = existing;
      }
    }
    if (tenant) {
      tenant->Reconfigure(config);
    } else {
      tenant = std::make_shared<Tenant>(config, clock);
    }
    tenants_.push_back(tenant);
    for (const std::string& digest : config.KeyDigests()) keys_.push_back({digest, tenant});
  }
  if (tenants_.empty()) {
    TenantConfig everyone;
    everyone.id = "default";
    everyone.keepkv = keepkv;
    default_tenant_ = std::make_shared<Tenant>(everyone, clock);
  }
}

absl::StatusOr<std::shared_ptr<Tenant>> TenantRegistry::Authenticate(
    std::string_view authorization) const {
  if (default_tenant_) return default_tenant_;
  absl::string_view value(authorization.data(), authorization.size());
  if (!absl::ConsumePrefix(&value, "Bearer ") && !absl::ConsumePrefix(&value, "bearer ")) {
    return WithErrorCode(
        absl::UnauthenticatedError(
            "missing API key: send it as the header 'Authorization: Bearer <key>'"),
        "invalid_api_key");
  }
  const std::string digest = base::Sha256Hex(std::string_view(value.data(), value.size()));
  // Compare with every key, so the time taken does not tell which (if any) matched.
  std::shared_ptr<Tenant> found;
  for (const Key& key : keys_) {
    if (ConstantTimeEquals(key.digest, digest) && !found) found = key.tenant;
  }
  if (!found) {
    return WithErrorCode(absl::UnauthenticatedError("incorrect API key"), "invalid_api_key");
  }
  return found;
}

std::vector<std::string> TenantRegistry::tenant_ids() const {
  std::vector<std::string> ids;
  for (const auto& tenant : tenants_) ids.push_back(tenant->id());
  if (default_tenant_) ids.push_back(default_tenant_->id());
  return ids;
}

}  // namespace kvd::server
