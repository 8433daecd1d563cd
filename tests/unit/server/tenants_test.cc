// Tenant admission: the per-minute token buckets refuse with 429 and a Retry-After that a
// retry can meet, and with 400 naming the limit a request that no wait can admit.
#include "server/auth/tenants.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/http/error_response.h"

namespace kvd::server {
namespace {

using ::testing::HasSubstr;

class FakeClock : public scheduler::Clock {
 public:
  absl::Time Now() const override { return now_; }
  void Advance(absl::Duration by) { now_ += by; }

 private:
  absl::Time now_ = absl::FromUnixSeconds(1'700'000'000);
};

std::string RetryAfter(const absl::Status& status) {
  for (const auto& [name, value] : ErrorFields(status)) {
    if (name == "retry-after") return value;
  }
  return "";
}

std::string ErrorCode(const absl::Status& status) {
  for (const auto& [name, value] : ErrorFields(status)) {
    if (name == "kvd-error-code") return value;
  }
  return "";
}

std::shared_ptr<Tenant> MakeTenant(const FakeClock& clock, int64_t tokens_per_minute,
                                   int32_t requests_per_minute = 0) {
  TenantConfig config;
  config.id = "alpha";
  config.tokens_per_minute = tokens_per_minute;
  config.requests_per_minute = requests_per_minute;
  return std::make_shared<Tenant>(config, clock);
}

TEST(TokenBucketTest, AnAmountBeyondTheCapacityNeverFits) {
  const absl::Time now = absl::FromUnixSeconds(0);
  TokenBucket bucket(100, now);
  EXPECT_EQ(bucket.TryTake(101, now), absl::InfiniteDuration());
  EXPECT_EQ(bucket.TryTake(101, now + absl::Hours(1)), absl::InfiniteDuration());
  EXPECT_EQ(bucket.TryTake(100, now), std::nullopt);
  // Half the capacity back takes half a minute.
  EXPECT_EQ(bucket.TryTake(50, now), absl::Seconds(30));
  EXPECT_EQ(TokenBucket(0, now).TryTake(1e12, now), std::nullopt) << "0 is unlimited";
}

TEST(TenantAdmitTest, ARequestOverTheWholeTokenLimitIsInvalidNotRateLimited) {
  FakeClock clock;
  auto tenant = MakeTenant(clock, 1000);
  Refusal refusal = Refusal::kNone;
  auto permit = tenant->Admit(1001, refusal);
  ASSERT_FALSE(permit.ok());
  EXPECT_EQ(permit.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpStatusFor(permit.status()), 400);
  EXPECT_EQ(RetryAfter(permit.status()), "") << "no retry can succeed";
  EXPECT_EQ(ErrorCode(permit.status()), "request_exceeds_limit");
  EXPECT_THAT(permit.status().message(), HasSubstr("charged 1001 tokens"));
  EXPECT_THAT(permit.status().message(), HasSubstr("tokens_per_minute: 1000"));
  EXPECT_THAT(ErrorJson(permit.status()), HasSubstr("\"type\":\"invalid_request_error\""));
  EXPECT_EQ(refusal, Refusal::kTokenRate) << "counted as a token-limit rejection";
  // It took nothing: the whole limit is still there, and a request slot too.
  auto whole = tenant->Admit(1000, refusal);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(refusal, Refusal::kNone);
}

TEST(TenantAdmitTest, ARequestThatFitsAfterAWaitIs429WithItsRetryAfter) {
  FakeClock clock;
  auto tenant = MakeTenant(clock, 1200);
  Refusal refusal = Refusal::kNone;
  ASSERT_TRUE(tenant->Admit(600, refusal).ok());
  auto refused = tenant->Admit(900, refusal);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(HttpStatusFor(refused.status()), 429);
  EXPECT_EQ(ErrorCode(refused.status()), "rate_limit_exceeded");
  EXPECT_EQ(refusal, Refusal::kTokenRate);
  // 300 more tokens refill in 15 s, and the retry then succeeds.
  EXPECT_EQ(RetryAfter(refused.status()), "15");
  clock.Advance(absl::Seconds(15));
  EXPECT_TRUE(tenant->Admit(900, refusal).ok());
}

TEST(TenantAdmitTest, ALowerLimitOnReloadTurnsTheSameRequestInvalid) {
  FakeClock clock;
  auto tenant = MakeTenant(clock, 1000);
  Refusal refusal = Refusal::kNone;
  TenantConfig lower;
  lower.id = "alpha";
  lower.tokens_per_minute = 100;
  tenant->Reconfigure(lower);
  auto refused = tenant->Admit(500, refusal);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(HttpStatusFor(refused.status()), 400);
  EXPECT_THAT(refused.status().message(), HasSubstr("tokens_per_minute: 100"));
}

TEST(TenantAdmitTest, RequestRateRefusalsWaitForTheBucket) {
  FakeClock clock;
  auto tenant = MakeTenant(clock, 0, 2);
  Refusal refusal = Refusal::kNone;
  std::vector<std::unique_ptr<TenantPermit>> held;
  for (int i = 0; i < 2; ++i) {
    auto permit = tenant->Admit(1'000'000, refusal);
    ASSERT_TRUE(permit.ok()) << permit.status();
    held.push_back(*std::move(permit));
  }
  auto refused = tenant->Admit(1, refusal);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(HttpStatusFor(refused.status()), 429);
  EXPECT_EQ(refusal, Refusal::kRequestRate);
  EXPECT_EQ(RetryAfter(refused.status()), "30");
}

}  // namespace
}  // namespace kvd::server
