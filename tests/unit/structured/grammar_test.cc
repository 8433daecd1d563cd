#include "structured/grammar.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "structured/stack_space.h"
#include "tests/unit/structured/grammar_test_support.h"

namespace kvd::structured {
namespace {

using ::testing::HasSubstr;
using testing::Accepts;
using testing::IsPrefix;

// list ::= "[" items "]" ; items ::= "" | "a" more ; more ::= "" | "," "a" more
Grammar ListGrammar() {
  GrammarBuilder builder;
  const int32_t list = builder.AddRule("list");
  const int32_t items = builder.AddRule("items");
  const int32_t more = builder.AddRule("more");
  std::vector<Symbol> sequence;
  builder.AppendLiteral("[", sequence);
  sequence.push_back(Symbol::Rule(items));
  builder.AppendLiteral("]", sequence);
  builder.AddAlternative(list, sequence);
  builder.AddAlternative(items, {});
  sequence.clear();
  builder.AppendLiteral("a", sequence);
  sequence.push_back(Symbol::Rule(more));
  builder.AddAlternative(items, sequence);
  builder.AddAlternative(more, {});
  sequence.clear();
  builder.AppendLiteral(",a", sequence);
  sequence.push_back(Symbol::Rule(more));
  builder.AddAlternative(more, sequence);
  return std::move(builder).Build(list).value();
}

TEST(GrammarTest, MatchesWholeSentencesAndTheirPrefixes) {
  const Grammar grammar = ListGrammar();
  for (const char* text : {"[]", "[a]", "[a,a]", "[a,a,a,a,a,a,a,a,a,a,a,a,a]"}) {
    EXPECT_TRUE(Accepts(grammar, text)) << text;
  }
  for (const char* text : {"", "[", "[a,", "a]", "[a,]", "[]]", "[aa]", "[a"}) {
    EXPECT_FALSE(Accepts(grammar, text)) << text;
  }
  EXPECT_TRUE(IsPrefix(grammar, "[a,"));
  EXPECT_FALSE(IsPrefix(grammar, "[a,,"));
  EXPECT_FALSE(IsPrefix(grammar, "[]x"));
}

TEST(GrammarTest, RepetitionKeepsTheStackFlat) {
  const Grammar grammar = ListGrammar();
  StackSpace stacks(grammar, 1 << 20);
  std::string text = "[a,a";
  testing::StacksAfter(stacks, text);
  const size_t after_two = stacks.stack_count();
  for (int i = 0; i < 1000; ++i) text += ",a";
  EXPECT_FALSE(testing::StacksAfter(stacks, text).empty());
  EXPECT_EQ(stacks.stack_count(), after_two);
}

TEST(GrammarTest, RefusesLeftRecursionAndEmptyRules) {
  {
    GrammarBuilder builder;
    const int32_t a = builder.AddRule("a");
    std::vector<Symbol> sequence = {Symbol::Rule(a)};
    builder.AppendLiteral("x", sequence);
    builder.AddAlternative(a, sequence);
    const absl::StatusOr<Grammar> grammar = std::move(builder).Build(a);
    ASSERT_FALSE(grammar.ok());
    EXPECT_THAT(grammar.status().message(), HasSubstr("'a' can reach itself"));
  }
  {
    // b ::= c b "x" with c empty-able is left-recursive too.
    GrammarBuilder builder;
    const int32_t b = builder.AddRule("b");
    const int32_t c = builder.AddRule("c");
    builder.AddAlternative(c, {});
    std::vector<Symbol> sequence = {Symbol::Rule(c), Symbol::Rule(b)};
    builder.AppendLiteral("x", sequence);
    builder.AddAlternative(b, sequence);
    EXPECT_FALSE(std::move(builder).Build(b).ok());
  }
  {
    GrammarBuilder builder;
    const int32_t a = builder.AddRule("a");
    const int32_t never = builder.AddRule("never");
    const Symbol symbol = Symbol::Rule(never);
    builder.AddAlternative(a, {&symbol, 1});
    const absl::StatusOr<Grammar> grammar = std::move(builder).Build(a);
    ASSERT_FALSE(grammar.ok());
    EXPECT_THAT(grammar.status().message(), HasSubstr("'never' can match nothing"));
  }
}

TEST(GrammarTest, PrintsItsRules) {
  EXPECT_EQ(ListGrammar().ToString(),
            "list ::= \"[\" items \"]\"\n"
            "items ::= \"\" | \"a\" more\n"
            "more ::= \"\" | \",\" \"a\" more\n");
}

TEST(GrammarTest, StackLimitTurnsIntoOverflowNotACrash) {
  const Grammar grammar = ListGrammar();
  StackSpace stacks(grammar, 2);
  testing::StacksAfter(stacks, "[a,a");
  EXPECT_TRUE(stacks.overflowed());
}

}  // namespace
}  // namespace kvd::structured
