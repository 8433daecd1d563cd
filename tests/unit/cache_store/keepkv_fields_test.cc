// The table of KeepKV's parameters: every member of KeepKvParams has one row, values are set
// and checked by their row's rule, and the docs and the example config say what the table says.
#include "cache_store/keepkv/keepkv_fields.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>

#include "tests/support/member_count.h"
#include "tests/support/source_dir.h"

namespace kvd::cache_store {
namespace {

std::string ReadSource(const std::string& path) {
  std::ifstream in(kvd::test_support::SourceDir() + "/" + path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string MessageOf(const std::optional<KeepKvViolation>& violation) {
  return violation ? std::string(violation->field) + " " + violation->message : "";
}

const KeepKvField& Row(std::string_view name) {
  const KeepKvField* field = FindKeepKvField(name);
  EXPECT_NE(field, nullptr) << name;
  return field != nullptr ? *field : kKeepKvFields[0];
}

TEST(KeepKvFieldsTest, EveryMemberHasOneRow) {
  // Each row's member is its own: setting a value through one row changes that member only.
  std::set<std::string_view> names;
  for (const KeepKvField& field : kKeepKvFields) {
    EXPECT_TRUE(names.insert(field.name).second) << field.name;
    EXPECT_FALSE(field.doc.empty()) << field.name;
    for (const KeepKvField& other : kKeepKvFields) {
      if (&other != &field) {
        EXPECT_NE(other.member, field.member) << field.name;
      }
    }
  }
  // And every member has a row.
  EXPECT_EQ(test_support::MemberCount<KeepKvParams>(), std::size(kKeepKvFields));
  EXPECT_FALSE(KeepKvParams{}.Check().has_value()) << MessageOf(KeepKvParams{}.Check());
}

TEST(KeepKvFieldsTest, ScopesSayWhoSetsWhat) {
  EXPECT_EQ(KeepKvKeys(KeepKvScope::kRequest),
            "budget, alpha, window, refresh_every, recent, method");
  EXPECT_EQ(KeepKvKeys(KeepKvScope::kOperator),
            "budget, alpha, window, pool, refresh_every, recent, sink, method, min_cosine, "
            "min_value_cosine, selection");
  EXPECT_FALSE(MaySet(KeepKvScope::kOperator, Row("protected_prefix")));
  EXPECT_FALSE(MaySet(KeepKvScope::kRequest, Row("sink")));
  EXPECT_TRUE(MaySet(KeepKvScope::kOperator, Row("sink")));
}

TEST(KeepKvFieldsTest, BudgetIsATokenCountOrAFraction) {
  KeepKvParams params;
  EXPECT_FALSE(SetKeepKvField(Row("budget"), int64_t{256}, params));
  EXPECT_EQ(params.budget.tokens, 256);
  EXPECT_EQ(params.Budget(1000), 256);
  // A bare 1 is the whole prompt, as 1.0 is; an explicit count of 1 is one token.
  EXPECT_FALSE(SetKeepKvField(Row("budget"), int64_t{1}, params));
  EXPECT_EQ(params.budget, (KeepKvBudget{.tokens = 0, .fraction = 1.0}));
  EXPECT_FALSE(SetKeepKvField(Row("budget"), KeepKvTokenCount{1}, params));
  EXPECT_EQ(params.Budget(1000), 1);
  EXPECT_FALSE(SetKeepKvField(Row("budget"), 0.25, params));
  EXPECT_EQ(params.budget, (KeepKvBudget{.tokens = 0, .fraction = 0.25}));
  EXPECT_EQ(params.Budget(10), 3);  // rounded up

  const struct {
    KeepKvValue value;
    std::string message;
  } bad[] = {
      {int64_t{0}, "budget must be a positive token count or a fraction in (0, 1], got 0"},
      {int64_t{-3}, "budget must be a positive token count or a fraction in (0, 1], got -3"},
      {0.0, "budget must be a positive token count or a fraction in (0, 1], got 0"},
      {1.5, "budget over 1 is a token count and must be an integer, got 1.5"},
      {int64_t{3000000000}, "budget must be at most 2147483647 tokens, got 3000000000"},
      {KeepKvTokenCount{0}, "budget must be a positive token count or a fraction in (0, 1], got 0"},
  };
  for (const auto& c : bad) {
    KeepKvParams unchanged;
    EXPECT_EQ(MessageOf(SetKeepKvField(Row("budget"), c.value, unchanged)), c.message);
    EXPECT_EQ(unchanged, KeepKvParams{});
  }
}

TEST(KeepKvFieldsTest, NumbersKeepTheirRowsRange) {
  const struct {
    std::string_view field;
    KeepKvValue value;
    std::string message;  // empty: accepted
  } cases[] = {
      {"alpha", 0.0, ""},
      {"alpha", int64_t{0}, ""},
      {"alpha", 1.0, "alpha must be in [0, 1), got 1"},
      {"alpha", -0.1, "alpha must be in [0, 1), got -0.1"},
      {"alpha", std::string("0.5"), "alpha must be a number"},
      {"window", int64_t{1}, ""},
      {"window", int64_t{0}, "window must be >= 1, got 0"},
      {"window", 2.5, "window must be an integer"},
      {"window", int64_t{5000000000},
       "window must be in [-2147483648, 2147483647], got 5000000000"},
      {"pool", int64_t{9}, ""},
      {"pool", int64_t{4}, "pool must be odd and >= 1 (1: none), got 4"},
      {"refresh_every", int64_t{-1}, "refresh_every must be >= 0 (0: never), got -1"},
      {"min_cosine", -1.0, ""},
      {"min_cosine", 1.5, "min_cosine must be in [-1, 1], got 1.5"},
      {"method", std::string("evict"), ""},
      {"method", std::string("average"),
       "method must be one of gqa_fit, group_mean, weighted_mean, convex, evict; got "
       "\"average\""},
      {"selection", std::string("random"),
       "selection must be one of lowest_scores, similar_pairs, into_sink; got \"random\""},
  };
  for (const auto& c : cases) {
    KeepKvParams params;
    EXPECT_EQ(MessageOf(SetKeepKvField(Row(c.field), c.value, params)), c.message) << c.field;
    if (c.message.empty()) {
      EXPECT_NE(params, KeepKvParams{}) << c.field;
    }
  }
  KeepKvParams params;
  ASSERT_FALSE(SetKeepKvField(Row("method"), std::string("evict"), params));
  EXPECT_EQ(params.method, MergeMethod::kEvict);
  EXPECT_EQ(KeepKvFieldText(Row("method"), params), "evict");

  // Check names the first row whose value breaks its rule, however the value got there.
  params = KeepKvParams{};
  params.recent = -1;
  params.min_cosine = 2.0f;
  EXPECT_EQ(MessageOf(params.Check()), "recent must be >= 0, got -1");
  EXPECT_EQ(params.Validate().message(), "keepkv.recent must be >= 0, got -1");
}

// docs/operations.md's table of the config's keys, docs/api.md's of a request's, and the example
// config each hold every row the table gives them, in the table's words and default.
TEST(KeepKvFieldsTest, DocsAndExampleConfigSayWhatTheTableSays) {
  const std::string operations = ReadSource("docs/operations.md");
  const std::string api = ReadSource("docs/api.md");
  const std::string example = ReadSource("deploy/config/example.yaml");
  for (const KeepKvField& field : kKeepKvFields) {
    if (!MaySet(KeepKvScope::kOperator, field)) continue;
    const std::string config_row = KeepKvDocRow(field, /*with_scope=*/true);
    EXPECT_NE(operations.find(config_row), std::string::npos)
        << "docs/operations.md lacks the row\n"
        << config_row;
    const std::string request_row = KeepKvDocRow(field, /*with_scope=*/false);
    if (MaySet(KeepKvScope::kRequest, field)) {
      EXPECT_NE(api.find(request_row), std::string::npos) << "docs/api.md lacks the row\n"
                                                          << request_row;
    } else {
      EXPECT_EQ(api.find("| `" + std::string(field.name) + "` |"), std::string::npos)
          << "docs/api.md lists an operator's key " << field.name;
    }
    const std::string text = KeepKvFieldText(field, KeepKvParams{});
    const std::string plain = "\n  " + std::string(field.name) + ": " + text + " ";
    const std::string quoted = "\n  " + std::string(field.name) + ": \"" + text + "\" ";
    EXPECT_TRUE(example.find(plain) != std::string::npos ||
                example.find(quoted) != std::string::npos)
        << "deploy/config/example.yaml lacks " << field.name << ": " << text;
  }
}

}  // namespace
}  // namespace kvd::cache_store
