#include "structured/regex_grammar.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "structured/stack_space.h"
#include "tests/unit/structured/grammar_test_support.h"

namespace kvd::structured {
namespace {

using ::testing::HasSubstr;

Grammar RegexGrammar(std::string_view pattern, const RegexOptions& options = {}) {
  GrammarBuilder builder;
  const absl::StatusOr<int32_t> rule = AddRegexRule(builder, pattern, options);
  EXPECT_TRUE(rule.ok()) << rule.status();
  return std::move(builder).Build(*rule).value();
}

struct Case {
  const char* pattern;
  const char* text;
  bool matches;
};

TEST(RegexGrammarTest, DecidesWholeTextMatches) {
  const Case cases[] = {
      {"abc", "abc", true},          {"abc", "abcd", false},
      {"a|bc", "bc", true},          {"a|bc", "ab", false},
      {"(ab)+", "ababab", true},     {"(ab)+", "", false},
      {"(?:ab)*c", "c", true},       {"a{2,3}", "aaa", true},
      {"a{2,3}", "aaaa", false},     {"a{2,3}", "a", false},
      {"a{2,}", "aaaaaaa", true},    {"a{3}", "aaa", true},
      {"x?y", "y", true},            {"[a-c]+", "abcab", true},
      {"[a-c]+", "abd", false},      {"[^a-c]", "d", true},
      {"[^a-c]", "b", false},        {"\\d{3}-\\d{4}", "555-1234", true},
      {"\\w+", "ab_9", true},        {"\\w", "-", false},
      {"\\s", "\t", true},           {"\\S", " ", false},
      {".", "\n", false},            {".", "é", true},
      {"[é-ë]", "ê", true},          {"[é-ë]", "e", false},
      {"\\u00e9", "é", true},        {"\\x41", "A", true},
      {"\\u{1F600}", "😀", true},     {"[^a]", "😀", true},
      {"^ab$", "ab", true},          {"a\\.b", "a.b", true},
      {"a\\.b", "axb", false},       {"a{,2}", "a{,2}", true},
      {"(?<year>\\d\\d)", "42", true}, {"a+?b", "aab", true},
      {"[\\]x]", "]", true},         {"[a\\-z]", "-", true},
      {"", "", true},                {"a|", "", true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(testing::Accepts(RegexGrammar(c.pattern), c.text), c.matches)
        << "/" << c.pattern << "/ on '" << c.text << "'";
  }
}

TEST(RegexGrammarTest, NeverMatchesInvalidUtf8) {
  const Grammar any = RegexGrammar(".*");
  EXPECT_TRUE(testing::Accepts(any, "h\xC3\xA9llo"));
  EXPECT_FALSE(testing::IsPrefix(any, "\xC3\x28"));       // a lead byte without continuation
  EXPECT_FALSE(testing::IsPrefix(any, "\xED\xA0\x80"));   // an encoded surrogate
  EXPECT_FALSE(testing::IsPrefix(any, "\xC0\xAF"));       // an overlong encoding
  EXPECT_FALSE(testing::IsPrefix(any, "\xF4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_TRUE(testing::IsPrefix(any, "\xF0\x9F\x98"));    // a character not yet finished
  EXPECT_FALSE(testing::Accepts(any, "\xF0\x9F\x98"));
}

TEST(RegexGrammarTest, SearchesWhenAskedAndHonoursAnchors) {
  const RegexOptions search{.search = true};
  EXPECT_TRUE(testing::Accepts(RegexGrammar("b+", search), "abbbc"));
  EXPECT_FALSE(testing::Accepts(RegexGrammar("^b+", search), "abbbc"));
  EXPECT_TRUE(testing::Accepts(RegexGrammar("^a", search), "abbbc"));
  EXPECT_FALSE(testing::Accepts(RegexGrammar("b$", search), "abbbc"));
}

TEST(RegexGrammarTest, InsideAJsonStringWritesCharactersAsJsonDoes) {
  const RegexOptions json{.inside_json_string = true};
  const Grammar grammar = RegexGrammar("[a\"\\\\\n]+", json);
  EXPECT_TRUE(testing::Accepts(grammar, "a\\\"\\\\\\n"));
  EXPECT_FALSE(testing::Accepts(grammar, "\""));
  EXPECT_FALSE(testing::Accepts(grammar, "\n"));
  EXPECT_TRUE(testing::Accepts(RegexGrammar("\\x01", json), "\\u0001"));
}

TEST(RegexGrammarTest, IgnoresAsciiCaseWhenAsked) {
  const Grammar grammar = RegexGrammar("[a-c]x", {.ignore_ascii_case = true});
  EXPECT_TRUE(testing::Accepts(grammar, "BX"));
  EXPECT_TRUE(testing::Accepts(grammar, "bx"));
}

TEST(RegexGrammarTest, RefusesWhatItDoesNotSupportNamingIt) {
  for (const auto& [pattern, what] : std::vector<std::pair<const char*, const char*>>{
           {"(?=a)", "lookaround"},
           {"a\\1", "escape \\1"},
           {"\\bword", "word boundary"},
           {"a^b", "anchor"},
           {"(ab", "no closing"},
           {"ab)", "unmatched"},
           {"[ab", "no closing ']'"},
           {"*a", "nothing to repeat"},
           {"a{2000}", "over 1000"},
           {"[z-a]", "class range"},
           {"\xC3", "UTF-8"},
       }) {
    GrammarBuilder builder;
    const absl::StatusOr<int32_t> rule = AddRegexRule(builder, pattern);
    ASSERT_FALSE(rule.ok()) << pattern;
    EXPECT_THAT(rule.status().message(), HasSubstr(what)) << pattern;
  }
}

TEST(RegexGrammarTest, NestedCountsGrowTheGrammarLinearly) {
  GrammarBuilder builder;
  const absl::StatusOr<int32_t> rule = AddRegexRule(builder, "((a{1000}){1000}){1000}");
  ASSERT_TRUE(rule.ok()) << rule.status();
  const absl::StatusOr<Grammar> grammar = std::move(builder).Build(*rule);
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  EXPECT_LT(grammar->symbol_count(), 4000u);
  EXPECT_TRUE(testing::IsPrefix(*grammar, std::string(5000, 'a')));
}

TEST(RegexGrammarTest, RepeatsOfRepeatsCollapse) {
  // ((0+)+)+... thirty deep would otherwise give the matcher 2^30 parses of one '0'.
  std::string pattern = "0";
  for (int i = 0; i < 30; ++i) pattern = "(?:" + pattern + ")+";
  const Grammar grammar = RegexGrammar("(" + pattern + ")*x");
  StackSpace stacks(grammar, 1 << 20);
  EXPECT_FALSE(testing::StacksAfter(stacks, "0000").empty());
  EXPECT_FALSE(stacks.overflowed());
  EXPECT_TRUE(testing::Accepts(grammar, "000x"));
  EXPECT_TRUE(testing::Accepts(grammar, "x"));
  // The collapsed forms keep their languages.
  EXPECT_FALSE(testing::Accepts(RegexGrammar("(?:a+){3}"), "aa"));
  EXPECT_TRUE(testing::Accepts(RegexGrammar("(?:a+){3}"), "aaaa"));
  EXPECT_TRUE(testing::Accepts(RegexGrammar("(?:a?){3}"), ""));
  EXPECT_FALSE(testing::Accepts(RegexGrammar("(?:a?){3}"), "aaaa"));
  EXPECT_TRUE(testing::Accepts(RegexGrammar("(a*)*b"), "aab"));
  // A run of a thousand optional letters is one bounded repeat, not a thousand at once.
  const Grammar optional = RegexGrammar("(?:[a-z]?){1000}");
  StackSpace optional_stacks(optional, 1 << 20);
  EXPECT_LE(testing::StacksAfter(optional_stacks, "abc").size(), 2u);
}

TEST(RegexGrammarTest, AQuantifierMayNotFollowAQuantifier) {
  GrammarBuilder builder;
  EXPECT_FALSE(AddRegexRule(builder, "a???").ok());
  EXPECT_FALSE(AddRegexRule(builder, "a{2}*").ok());
  EXPECT_TRUE(AddRegexRule(builder, "a??b").ok());
}

}  // namespace
}  // namespace kvd::structured
