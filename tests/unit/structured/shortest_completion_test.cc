#include "structured/shortest_completion.h"

#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "structured/json_schema_grammar.h"
#include "structured/stack_space.h"

namespace kvd::structured {
namespace {

// The fewest bytes after which a fresh matcher of `grammar` is accepted.
int32_t ShortestSentence(const Grammar& grammar) {
  StackSpace stacks(grammar, 1 << 16);
  int32_t shortest = kUnboundedLength;
  for (int32_t stack : stacks.initial()) {
    shortest = std::min(shortest, stacks.shortest_completion(stack));
  }
  return shortest;
}

TEST(ShortestCompletionTest, EachPositionKnowsTheFewestBytesToItsSequencesEnd) {
  // root ::= "ab" tail | tail "c" ; tail ::= "d" tail | "ee"
  GrammarBuilder builder;
  const int32_t root = builder.AddRule("root");
  const int32_t tail = builder.AddRule("tail");
  std::vector<Symbol> first;
  builder.AppendLiteral("ab", first);
  first.push_back(Symbol::Rule(tail));
  builder.AddAlternative(root, first);
  std::vector<Symbol> second = {Symbol::Rule(tail)};
  builder.AppendLiteral("c", second);
  builder.AddAlternative(root, second);
  std::vector<Symbol> loop;
  builder.AppendLiteral("d", loop);
  loop.push_back(Symbol::Rule(tail));
  builder.AddAlternative(tail, loop);
  std::vector<Symbol> end;
  builder.AppendLiteral("ee", end);
  builder.AddAlternative(tail, end);
  const Grammar grammar = std::move(builder).Build(root).value();

  const std::vector<int32_t> suffix = ShortestSuffixLengths(grammar);
  const std::vector<int32_t> expected_first = {4, 3, 2, 0};  // "a" "b" tail end
  const std::vector<int32_t> expected_second = {3, 1, 0};    // tail "c" end
  const auto starts = grammar.alternatives(root);
  for (size_t i = 0; i < expected_first.size(); ++i) {
    EXPECT_EQ(suffix[starts[0] + i], expected_first[i]) << i;
  }
  for (size_t i = 0; i < expected_second.size(); ++i) {
    EXPECT_EQ(suffix[starts[1] + i], expected_second[i]) << i;
  }
  EXPECT_EQ(ShortestSentence(grammar), 3);  // "eec"
}

TEST(ShortestCompletionTest, ASchemasShortestInstanceIsCompact) {
  const auto shortest = [](const char* schema, JsonWhitespace whitespace) {
    return ShortestSentence(CompileJsonSchema(nlohmann::ordered_json::parse(schema), whitespace)
                                .value());
  };
  const char* object = R"({"type": "object", "properties": {"a": {"type": "integer"},
      "b": {"type": "string", "minLength": 3}}, "required": ["a", "b"]})";
  EXPECT_EQ(shortest(object, JsonWhitespace::kCompact), 17);  // {"a":0,"b":"xxx"}
  EXPECT_EQ(shortest(object, JsonWhitespace::kAny), 17);
  EXPECT_EQ(shortest(R"({"type": "array", "items": {"type": "boolean"}, "minItems": 2})",
                     JsonWhitespace::kCompact),
            11);  // [true,true]
}

}  // namespace
}  // namespace kvd::structured
