#include "base/status_macros.h"

#include <gtest/gtest.h>

#include <memory>

namespace kvd::base {
namespace {

absl::StatusOr<std::unique_ptr<int>> Boxed(int value) {
  if (value < 0) return absl::InvalidArgumentError("negative");
  return std::make_unique<int>(value);
}

absl::Status Check(int value) {
  return value == 13 ? absl::FailedPreconditionError("unlucky") : absl::OkStatus();
}

absl::StatusOr<int> Half(int value) {
  if (value % 2 != 0) return absl::InvalidArgumentError("odd");
  return value / 2;
}

// A quarter of `value` through both macros (a move-only value, an existing variable, two
// assignments in one scope), so that every early return is observable.
absl::StatusOr<int> Quarter(int value) {
  KVD_RETURN_IF_ERROR(Check(value));
  KVD_ASSIGN_OR_RETURN(std::unique_ptr<int> boxed, Boxed(value));
  int half = 0;
  KVD_ASSIGN_OR_RETURN(half, Half(*boxed));
  KVD_ASSIGN_OR_RETURN(const int quarter, Half(half));
  return quarter;
}

TEST(StatusMacrosTest, PassValuesOnAndReturnErrorsUnchanged) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(13).status(), absl::FailedPreconditionError("unlucky"));
  EXPECT_EQ(Quarter(-4).status(), absl::InvalidArgumentError("negative"));
  EXPECT_EQ(Quarter(6).status(), absl::InvalidArgumentError("odd"));
}

}  // namespace
}  // namespace kvd::base
