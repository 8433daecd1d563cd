// A tenant's document usage: reservations refused over the quota, settled to the stored size
// or released, and a recount that keeps the reservations of compressions still running.
#include "documents/usage_ledger.h"

#include <gtest/gtest.h>

#include "base/status_details.h"

namespace kvd::documents {
namespace {

TEST(UsageLedgerTest, ReservationsSettleOrRelease) {
  UsageLedger ledger;
  const DocumentQuota quota{.max_documents = 2, .max_bytes = 1000};
  ASSERT_TRUE(ledger.Reserve("t", "a", quota, 400).ok());
  ASSERT_TRUE(ledger.Reserve("t", "b", quota, 300).ok());
  EXPECT_EQ(ledger.Snapshot()["t"], (TenantDocuments{.documents = 2, .bytes = 700}));

  ledger.Settle("a", 250);  // stored smaller than estimated
  EXPECT_EQ(ledger.Snapshot()["t"], (TenantDocuments{.documents = 2, .bytes = 550}));
  ledger.Settle("a", 999);  // settled once only
  EXPECT_TRUE(ledger.Release("b"));
  EXPECT_FALSE(ledger.Release("b"));
  EXPECT_FALSE(ledger.Release("a"));  // stored: only Remove takes it away
  EXPECT_EQ(ledger.Snapshot()["t"], (TenantDocuments{.documents = 1, .bytes = 250}));
  ledger.Resize("t", 50);
  ledger.Remove("t", 300);
  EXPECT_EQ(ledger.Snapshot()["t"], (TenantDocuments{.documents = 0, .bytes = 0}));
}

TEST(UsageLedgerTest, QuotaRefusals) {
  UsageLedger ledger;
  const DocumentQuota quota{.max_documents = 1, .max_bytes = 1000};
  absl::Status alone = ledger.Reserve("t", "big", quota, 1001);
  EXPECT_EQ(alone.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ErrorCodeOf(alone), "request_too_large");
  EXPECT_EQ(ParamOf(alone), "compression");

  ASSERT_TRUE(ledger.Reserve("t", "a", quota, 600).ok());
  absl::Status count = ledger.Reserve("t", "b", quota, 1);
  EXPECT_EQ(count.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(RetryAfterOf(count), "60");
  // Other tenants have their own usage; unlimited quotas refuse nothing.
  EXPECT_TRUE(ledger.Reserve("u", "c", quota, 1000).ok());
  EXPECT_TRUE(ledger.Reserve("t", "d", DocumentQuota{}, 1 << 30).ok());

  absl::Status bytes = ledger.Reserve("u", "e", {.max_documents = 0, .max_bytes = 1500}, 600);
  EXPECT_EQ(bytes.code(), absl::StatusCode::kResourceExhausted);
}

TEST(UsageLedgerTest, RecountKeepsRunningReservations) {
  UsageLedger ledger;
  ASSERT_TRUE(ledger.Reserve("t", "running", DocumentQuota{}, 500).ok());
  // The store holds the running document as processing (no bytes) and one ready document.
  ledger.Recount({.usage = {{"t", {.documents = 2, .bytes = 300}}}, .processing = {"running"}});
  EXPECT_EQ(ledger.Snapshot()["t"], (TenantDocuments{.documents = 2, .bytes = 800}));
  ledger.Settle("running", 200);
  EXPECT_EQ(ledger.Snapshot()["t"], (TenantDocuments{.documents = 2, .bytes = 500}));
}

// A sweep's scan can read the store before an upload's processing meta is written, and recount
// after the upload reserved its place: the document still counts, and the quota still holds.
TEST(UsageLedgerTest, RecountKeepsAReservationItsScanMissed) {
  UsageLedger ledger;
  const DocumentQuota quota{.max_documents = 1, .max_bytes = 0};
  ASSERT_TRUE(ledger.Reserve("t", "new", quota, 500).ok());
  ledger.Recount({.usage = {}, .processing = {}});
  EXPECT_EQ(ledger.Snapshot()["t"], (TenantDocuments{.documents = 1, .bytes = 500}));
  ledger.Settle("new", 200);
  EXPECT_EQ(ledger.Snapshot()["t"], (TenantDocuments{.documents = 1, .bytes = 200}));
  EXPECT_EQ(ledger.Reserve("t", "another", quota, 1).code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace kvd::documents
