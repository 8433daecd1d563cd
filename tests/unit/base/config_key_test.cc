#include "base/config_key.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace kvd::base {
namespace {

struct Section {
  int32_t count = 1;
  double seconds = 1.0;
  size_t bytes = 1;
  std::string name = "a";
  std::optional<std::string> prompt;
  bool flag = false;
};

constexpr std::string_view kNames[] = {"a", "b"};

constexpr ConfigKey<Section> kKeys[] = {
    {.name = "count", .member = &Section::count, .range = {.min = 0, .zero_means = "unlimited"}},
    {.name = "seconds",
     .member = &Section::seconds,
     .range = {.min = 0, .max = 86400, .min_open = true, .unit = "seconds"}},
    {.name = "bytes", .member = &Section::bytes, .range = {.min = 1, .max = 4294967295.0}},
    {.name = "name", .member = &Section::name, .text = {.choices = kNames}},
    {.name = "prompt", .member = &Section::prompt, .text = {.non_empty = true, .max_bytes = 4}},
    {.name = "flag", .member = &Section::flag},
};

std::string Error(const Section& section) {
  const absl::Status status = CheckConfigKeys("part", KeysOf(kKeys), section);
  return status.ok() ? "ok" : std::string(status.message());
}

TEST(ConfigKeyTest, EachRuleSaysWhatItWantsAndWhatItGot) {
  EXPECT_EQ(Error(Section{}), "ok");
  EXPECT_EQ(Error(Section{.count = -1}), "part.count: must be at least 0 (0: unlimited), got -1");
  EXPECT_EQ(Error(Section{.seconds = 0}), "part.seconds: must be in (0, 86400] seconds, got 0");
  EXPECT_EQ(Error(Section{.seconds = 0.5}), "ok");
  EXPECT_EQ(Error(Section{.seconds = 86400.5}),
            "part.seconds: must be in (0, 86400] seconds, got 86400.5");
  EXPECT_EQ(Error(Section{.bytes = size_t{1} << 32}),
            "part.bytes: must be in [1, 4294967295], got 4294967296");
  EXPECT_EQ(Error(Section{.name = "c"}), "part.name: must be one of a, b, got \"c\"");
  EXPECT_EQ(Error(Section{.prompt = ""}), "part.prompt: must not be empty");
  EXPECT_EQ(Error(Section{.prompt = "abcde"}), "part.prompt: must be at most 4 bytes, got 5");
  EXPECT_EQ(Error(Section{.prompt = "abcd"}), "ok");
}

TEST(ConfigKeyTest, ANumberThatIsNotFiniteKeepsNoRange) {
  EXPECT_EQ(Error(Section{.seconds = std::numeric_limits<double>::quiet_NaN()}),
            "part.seconds: must be in (0, 86400] seconds, got nan");
  const ValueRange open_ended{.min = 0};
  EXPECT_FALSE(CheckNumber("x", open_ended, std::numeric_limits<double>::infinity()).ok());
}

TEST(ConfigKeyTest, TheErrorCarriesItsKeyPath) {
  const absl::Status status = CheckConfigKeys("", KeysOf(kKeys), Section{.count = -5});
  EXPECT_EQ(ConfigErrorKeyPath(status), "count");
  EXPECT_EQ(ConfigErrorKeyPath(absl::InvalidArgumentError("count: other")), std::nullopt);
}

TEST(ConfigKeyTest, PrintableTextHasNoSpaceOrControl) {
  const TextRule rule{.printable = true};
  EXPECT_TRUE(CheckText("k", rule, "tcp://*:5557").ok());
  const std::string_view bad_values[] = {"a b", "a\tb", std::string_view("a\0b", 3), "a\x7f"};
  for (std::string_view bad : bad_values) {
    EXPECT_EQ(std::string(CheckText("k", rule, bad).message()),
              "k: must not contain whitespace or control characters");
  }
}

}  // namespace
}  // namespace kvd::base
