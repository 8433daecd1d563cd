// The documents' request workers: every task posted before Stop runs, none after.
#include "documents/request_workers.h"

#include <gtest/gtest.h>

#include <atomic>

namespace kvd::documents {
namespace {

TEST(RequestWorkersTest, StopRunsWhatWasPostedAndRefusesMore) {
  std::atomic<int> ran = 0;
  RequestWorkers workers(2);
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(workers.Post([&] { ran.fetch_add(1); }));
  }
  workers.Stop();
  EXPECT_EQ(ran.load(), 100);
  EXPECT_FALSE(workers.Post([&] { ran.fetch_add(1); }));
  workers.Stop();  // idempotent
  EXPECT_EQ(ran.load(), 100);
}

}  // namespace
}  // namespace kvd::documents
