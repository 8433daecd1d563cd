#include "server/config/byte_size.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace kvd::server {
namespace {

using ::testing::HasSubstr;

TEST(ByteSizeTest, ParsesAndRejects) {
  EXPECT_EQ(*ParseByteSize("512MiB"), uint64_t{512} << 20);
  EXPECT_EQ(*ParseByteSize(" 7 "), 7u);
  EXPECT_EQ(*ParseByteSize("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(*ParseByteSize("16777215TiB"), uint64_t{16777215} << 40);
  for (const char* bad : {"", "MiB", "-1", "1.5GiB", "12XB", "1 mib", "1GiBs", "1 G", "0x10"}) {
    EXPECT_EQ(ParseByteSize(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_THAT(std::string(ParseByteSize("18446744073709551616").status().message()),
              HasSubstr("too large"));
  EXPECT_THAT(std::string(ParseByteSize("16777216TiB").status().message()), HasSubstr("too large"));
}

}  // namespace
}  // namespace kvd::server
