// The table of the numeric sampling parameters: every numeric member of SamplingParams has one
// row, values are set and checked by their row's rule, and docs/api.md says what the table says.
#include "engine/sampling_fields.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <variant>

#include "absl/strings/str_cat.h"

#include "tests/support/member_count.h"
#include "tests/support/source_dir.h"

namespace kvd::engine {
namespace {

const SamplingField& Row(std::string_view name) {
  const SamplingField* field = FindSamplingField(name);
  EXPECT_NE(field, nullptr) << name;
  return field != nullptr ? *field : kSamplingFields[0];
}

std::string Refusal(std::string_view name, double value) {
  SamplingParams params;
  const absl::Status status = SetSamplingField(Row(name), value, params);
  EXPECT_EQ(SamplingFieldValue(Row(name), params), SamplingFieldValue(Row(name), {}))
      << "a refused value leaves the member as it was";
  return std::string(status.message());
}

TEST(SamplingFieldsTest, EveryNumericMemberHasOneRow) {
  std::set<std::string_view> names;
  for (const SamplingField& field : kSamplingFields) {
    EXPECT_TRUE(names.insert(field.name).second) << field.name;
    EXPECT_FALSE(field.doc.empty()) << field.name;
    for (const SamplingField& other : kSamplingFields) {
      if (&other != &field) {
        EXPECT_NE(other.member, field.member) << field.name;
      }
    }
    EXPECT_TRUE(field.range.Contains(SamplingFieldValue(field, SamplingParams{})))
        << field.name << "'s default";
  }
  // The members that are not a number in a range: logit_bias, seed, logprobs, top_logprobs.
  EXPECT_EQ(test_support::MemberCount<SamplingParams>(), std::size(kSamplingFields) + 4);
  EXPECT_TRUE(SamplingParams{}.Validate(5).ok());
}

TEST(SamplingFieldsTest, SetsValuesWithinTheRowsRule) {
  SamplingParams params;
  ASSERT_TRUE(SetSamplingField(Row("top_p"), 0.25, params).ok());
  EXPECT_EQ(params.top_p, 0.25f);
  ASSERT_TRUE(SetSamplingField(Row("top_k"), -1, params).ok());
  EXPECT_EQ(params.top_k, -1);
  ASSERT_TRUE(SetSamplingField(Row("temperature"), 0, params).ok());
  EXPECT_EQ(params.temperature, 0.0f);

  EXPECT_EQ(Refusal("top_p", 0), "'top_p' must be in (0, 1], got 0");
  EXPECT_EQ(Refusal("top_p", 1e-50), "'top_p' must be in (0, 1], got 1e-50")
      << "a positive value that is 0 as a float";
  EXPECT_EQ(Refusal("temperature", 2.5), "'temperature' must be in [0, 2] (0: greedy), got 2.5");
  EXPECT_EQ(Refusal("temperature", std::nan("")), "'temperature' must be in [0, 2] (0: greedy), got nan");
  EXPECT_EQ(Refusal("top_k", 1.5), "'top_k' must be an integer, got 1.5");
  EXPECT_EQ(Refusal("top_k", 5e9),
            "'top_k' must be in [-1, 2147483647] (-1 or 0: every token), got 5000000000");
  EXPECT_EQ(Refusal("repetition_penalty", 0), "'repetition_penalty' must be in [0.01, 10], got 0");
}

// Validate checks every row's rule, however the value got there (`kvd generate`'s flags set the
// members directly), in the same words as a request's refusal.
TEST(SamplingFieldsTest, ValidateHoldsEveryRowToItsRule) {
  for (const SamplingField& field : kSamplingFields) {
    SamplingParams params;
    std::visit([&](auto member) { params.*member = -3; }, field.member);
    const absl::Status status = params.Validate(5);
    if (field.range.Contains(-3)) {
      EXPECT_TRUE(status.ok()) << field.name;
    } else {
      EXPECT_EQ(status.message(), absl::StrCat("'", std::string(field.name), "' must be ",
                                               field.range.Rule(), ", got -3"));
    }
  }
}

TEST(SamplingFieldsTest, FlagsAndDocsSayWhatTheTableSays) {
  EXPECT_EQ(SamplingFlag(Row("repetition_penalty")), "--repetition-penalty");
  std::ifstream in(test_support::SourceDir() + "/docs/api.md");
  std::stringstream api;
  api << in.rdbuf();
  for (const SamplingField& field : kSamplingFields) {
    const std::string row = SamplingDocRow(field);
    EXPECT_NE(api.str().find(row), std::string::npos) << "docs/api.md lacks the row\n" << row;
  }
}

}  // namespace
}  // namespace kvd::engine
