// ConnectionLimiter: the listener's limit and the per-address limit, and release.
#include "server/http/connection_limiter.h"

#include <gtest/gtest.h>

namespace kvd::server {
namespace {

TEST(ConnectionLimiterTest, EnforcesBothLimitsAndFreesOnRelease) {
  ConnectionLimiter limiter(/*max_connections=*/3, /*max_per_client=*/2);
  EXPECT_TRUE(limiter.TryAcquire("10.0.0.1"));
  EXPECT_TRUE(limiter.TryAcquire("10.0.0.1"));
  EXPECT_FALSE(limiter.TryAcquire("10.0.0.1")) << "per client";
  EXPECT_TRUE(limiter.TryAcquire("10.0.0.2"));
  EXPECT_FALSE(limiter.TryAcquire("10.0.0.3")) << "in all";
  EXPECT_EQ(limiter.open(), 3);
  limiter.Release("10.0.0.1");
  EXPECT_TRUE(limiter.TryAcquire("10.0.0.3"));
  EXPECT_FALSE(limiter.TryAcquire("10.0.0.1"));
  limiter.Release("10.0.0.2");
  EXPECT_TRUE(limiter.TryAcquire("10.0.0.1"));
  EXPECT_EQ(limiter.open(), 3);
}

TEST(ConnectionLimiterTest, ZeroMeansNoLimit) {
  ConnectionLimiter limiter(0, 0);
  for (int i = 0; i < 10000; ++i) ASSERT_TRUE(limiter.TryAcquire("10.0.0.1"));
  EXPECT_EQ(limiter.open(), 10000);
}

}  // namespace
}  // namespace kvd::server
