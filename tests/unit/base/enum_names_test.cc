#include "base/enum_names.h"

#include <gtest/gtest.h>

namespace kvd::base {
namespace {

enum class Color { kRed, kGreen, kBlue };

constexpr auto kColorNames =
    MakeEnumNames<Color>({{Color::kRed, "red"}, {Color::kGreen, "green"}, {Color::kBlue, "blue"}});

TEST(EnumNamesTest, BothDirectionsComeFromOneTable) {
  static_assert(kColorNames.Name(Color::kGreen) == "green");
  for (const auto& entry : kColorNames.entries()) {
    EXPECT_EQ(kColorNames.Find(entry.name), entry.value);
    EXPECT_EQ(kColorNames.Name(entry.value), entry.name);
  }
  EXPECT_EQ(kColorNames.Find("Red"), std::nullopt);
  EXPECT_EQ(kColorNames.Find(""), std::nullopt);
}

TEST(EnumNamesTest, ParseNamesTheFieldAndTheChoices) {
  EXPECT_EQ(*kColorNames.Parse("blue", "paint.color"), Color::kBlue);
  absl::StatusOr<Color> bad = kColorNames.Parse("purple", "paint.color");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "paint.color must be one of red, green, blue; got \"purple\"");
}

TEST(EnumNamesDeathTest, AValueMissingFromTheTableStopsTheProcess) {
  constexpr auto partial = MakeEnumNames<Color>({{Color::kRed, "red"}});
  EXPECT_DEATH(static_cast<void>(partial.Name(Color::kBlue)), "check failed");
}

}  // namespace
}  // namespace kvd::base
