#include "server/config/api_key.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace kvd::server {
namespace {

constexpr char kDigestAbc[] = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

TEST(ApiKeyTest, ConstantTimeEquals) {
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_TRUE(ConstantTimeEquals(kDigestAbc, kDigestAbc));
  EXPECT_TRUE(ConstantTimeEquals(std::string(kDigestAbc), std::string_view(kDigestAbc)));
  std::string first = kDigestAbc;
  first[0] = 'c';
  std::string last = kDigestAbc;
  last[63] = 'e';
  EXPECT_FALSE(ConstantTimeEquals(kDigestAbc, first));
  EXPECT_FALSE(ConstantTimeEquals(kDigestAbc, last));
  EXPECT_FALSE(ConstantTimeEquals(kDigestAbc, std::string(kDigestAbc) + "0"));
  EXPECT_FALSE(ConstantTimeEquals(std::string(kDigestAbc).substr(0, 63), kDigestAbc));
  EXPECT_FALSE(ConstantTimeEquals("", "a"));
  EXPECT_FALSE(ConstantTimeEquals("a", ""));
  EXPECT_FALSE(ConstantTimeEquals(std::string_view("a\0b", 3), std::string_view("a\0c", 3)));
}

}  // namespace
}  // namespace kvd::server
