#include "structured/constraint.h"

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/check.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "structured/json_schema_grammar.h"
#include "structured/regex_grammar.h"
#include "structured/stack_space.h"
#include "tests/support/source_dir.h"
#include "tests/unit/structured/grammar_test_support.h"

namespace kvd::structured {
namespace {

// The bundled model's end tokens: <|eot_id|> and <|end_of_text|>.
constexpr int32_t kEndTokens[] = {873, 870};

class ConstraintTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tokenizer_ = text::Tokenizer::FromFile(kvd::test_support::SourceDir() +
                                           "/models/kvd-tiny/tokenizer.json")
                     .value()
                     .release();
    trie_ = new std::shared_ptr<const TokenTrie>(
        TokenTrie::Create(*tokenizer_, {std::begin(kEndTokens), std::end(kEndTokens)}).value());
  }
  static void TearDownTestSuite() {
    delete trie_;
    delete tokenizer_;
  }

  static std::shared_ptr<const Constraint> SchemaConstraint(const char* schema) {
    absl::StatusOr<Grammar> grammar =
        CompileJsonSchema(JsonValue::parse(schema), JsonWhitespace::kCompact);
    KVD_CHECK(grammar.ok());
    return std::make_shared<const Constraint>(*std::move(grammar), *trie_);
  }

  static text::Tokenizer* tokenizer_;
  static std::shared_ptr<const TokenTrie>* trie_;
};

text::Tokenizer* ConstraintTest::tokenizer_ = nullptr;
std::shared_ptr<const TokenTrie>* ConstraintTest::trie_ = nullptr;

constexpr const char* kPersonSchema = R"({
  "type": "object",
  "properties": {"name": {"type": "string", "maxLength": 12},
                 "age": {"type": "integer"},
                 "tags": {"type": "array", "items": {"enum": ["a", "b c", "é"]}, "maxItems": 3},
                 "home": {"anyOf": [{"type": "null"}, {"type": "object",
                          "properties": {"city": {"type": "string"}}, "required": ["city"]}]}},
  "required": ["name", "age", "tags", "home"],
  "additionalProperties": false})";

TEST_F(ConstraintTest, TrieHoldsEveryTextTokenAndNoSpecialOne) {
  const TokenTrie& trie = **trie_;
  EXPECT_EQ(trie.vocab_size(), tokenizer_->vocab_size());
  for (int32_t token = 0; token < trie.vocab_size(); ++token) {
    EXPECT_EQ(trie.text_of(token).has_value(), !tokenizer_->IsSpecial(token)) << token;
  }
  EXPECT_TRUE(trie.is_end_token(873));
  EXPECT_FALSE(trie.is_end_token(100));
}

// The mask at a state is exactly the tokens whose bytes keep the text a prefix of a sentence.
TEST_F(ConstraintTest, MaskAllowsExactlyTheTokensThatKeepTheTextAPrefix) {
  const std::shared_ptr<const Constraint> constraint = SchemaConstraint(kPersonSchema);
  StackSpace reference(constraint->grammar(), 1 << 20);
  for (const std::string prefix :
       {"", "{", R"({"name")", R"({"name":"Jo)", R"({"name":"Jo\)",
        R"({"name":"Jo","age":-)", R"({"name":"Jo","age":4)",
        R"({"name":"Jo","age":4,"tags":["b)", R"({"name":"Jo","age":4,"tags":[],"home":null)",
        "{\"name\":\"\xC3"}) {
    ConstraintMatcher matcher(constraint);
    ASSERT_TRUE(matcher.AcceptText(prefix).ok()) << prefix;
    const std::shared_ptr<const TokenMask> mask = matcher.NextTokens().value();
    int32_t allowed = 0;
    for (int32_t token = 0; token < tokenizer_->vocab_size(); ++token) {
      const std::optional<std::string_view> text = (*trie_)->text_of(token);
      const bool keeps =
          text.has_value() && !testing::StacksAfter(reference, prefix + std::string(*text)).empty();
      EXPECT_EQ(mask->allows(token), keeps) << "after '" << prefix << "', token " << token;
      allowed += keeps;
    }
    EXPECT_GT(allowed, 0) << prefix;
  }
}

TEST_F(ConstraintTest, EndTokensOnlyWhereTheValueIsWholeAndForcedWhenNothingCanFollow) {
  const std::shared_ptr<const Constraint> constraint =
      SchemaConstraint(R"({"type": "array", "items": {"type": "integer"}, "maxItems": 1})");
  ConstraintMatcher matcher(constraint);
  ASSERT_TRUE(matcher.AcceptText("[1").ok());
  EXPECT_FALSE(matcher.NextTokens().value()->allows(873));
  ASSERT_TRUE(matcher.AcceptText("]").ok());
  EXPECT_TRUE(matcher.complete());
  EXPECT_FALSE(matcher.can_continue());
  const std::shared_ptr<const TokenMask> mask = matcher.NextTokens().value();
  EXPECT_EQ(mask->count(), 2);
  EXPECT_TRUE(mask->allows(870));
  EXPECT_TRUE(mask->allows(873));
  ASSERT_TRUE(matcher.Accept(873).ok());
  EXPECT_TRUE(matcher.ended());
  EXPECT_EQ(matcher.NextTokens().value()->count(), 0);
  EXPECT_FALSE(matcher.Accept(873).ok());
}

TEST_F(ConstraintTest, RefusesATokenTheMaskExcludesAndStaysWhereItWas) {
  const std::shared_ptr<const Constraint> constraint = SchemaConstraint(R"({"type": "integer"})");
  ConstraintMatcher matcher(constraint);
  const int32_t letter = tokenizer_->Encode("x", false).at(0);
  EXPECT_EQ(matcher.Accept(letter).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(matcher.Accept(873).code(), absl::StatusCode::kInvalidArgument);
  const int32_t seven = tokenizer_->Encode("7", false).at(0);
  EXPECT_TRUE(matcher.Accept(seven).ok());
  EXPECT_TRUE(matcher.complete());
}

TEST_F(ConstraintTest, RemembersTheMaskOfAStateItHasMet) {
  const std::shared_ptr<const Constraint> constraint = SchemaConstraint(R"({"type": "string"})");
  ConstraintMatcher first(constraint);
  ASSERT_TRUE(first.AcceptText("\"abc").ok());
  const auto mask = first.NextTokens().value();
  ConstraintMatcher second(constraint);
  ASSERT_TRUE(second.AcceptText("\"hello world").ok());
  EXPECT_EQ(second.NextTokens().value(), mask) << "inside a string the state is the same";
  EXPECT_EQ(constraint->mask_statistics().computed, 1u);
  EXPECT_EQ(constraint->mask_statistics().reused, 1u);
}

// Whatever tokens a sampler picks among those allowed, the text stays a prefix of a valid value,
// and every text that ends parses and validates.
TEST_F(ConstraintTest, RandomAllowedTokensAlwaysMakeAValidValue) {
  const std::shared_ptr<const Constraint> constraint = SchemaConstraint(kPersonSchema);
  // The text is checked independently of the matcher, byte by byte, in a space of its own.
  StackSpace reference(constraint->grammar(), 1 << 20);
  std::mt19937_64 random(7);
  int ended = 0;
  for (int walk = 0; walk < 200; ++walk) {
    ConstraintMatcher matcher(constraint);
    std::string text;
    std::vector<int32_t> state = reference.initial(), next;
    for (int step = 0; step < 400 && !matcher.ended(); ++step) {
      const std::shared_ptr<const TokenMask> mask = matcher.NextTokens().value();
      std::vector<int32_t> allowed;
      mask->ForEach([&](int32_t token) { allowed.push_back(token); });
      ASSERT_FALSE(allowed.empty()) << text;
      // Half the time an end token when one is allowed, so that walks finish.
      int32_t token = allowed[random() % allowed.size()];
      if (mask->allows(873) && random() % 2 == 0) token = 873;
      ASSERT_TRUE(matcher.Accept(token).ok()) << text << " + " << token;
      if (matcher.ended()) break;
      const std::string_view bytes = *(*trie_)->text_of(token);
      text += bytes;
      for (char c : bytes) {
        reference.StepAll(state, static_cast<uint8_t>(c), next);
        state.swap(next);
      }
      ASSERT_FALSE(state.empty()) << "not a prefix of a valid value: " << text;
    }
    if (!matcher.ended()) continue;
    ++ended;
    ASSERT_EQ(state.front(), StackSpace::kAccepted) << text;
    const nlohmann::json value = nlohmann::json::parse(text);
    EXPECT_TRUE(value["name"].is_string());
    EXPECT_LE(value["tags"].size(), 3u);
    EXPECT_TRUE(value["home"].is_null() || value["home"]["city"].is_string()) << text;
  }
  EXPECT_GT(ended, 50);
}

TEST_F(ConstraintTest, ChoiceOfLiterals) {
  GrammarBuilder builder;
  const int32_t rule = AddRegexRule(builder, "yes|no|maybe not").value();
  const auto constraint =
      std::make_shared<const Constraint>(std::move(builder).Build(rule).value(), *trie_);
  ConstraintMatcher matcher(constraint);
  const auto mask = matcher.NextTokens().value();
  mask->ForEach([&](int32_t token) {
    const std::string text(*(*trie_)->text_of(token));
    EXPECT_TRUE(std::string("yes").starts_with(text) || std::string("no").starts_with(text) ||
                std::string("maybe not").starts_with(text))
        << text;
  });
}

// Random walks through the allowed tokens under a token budget: wherever the shortest sentence
// fits, each walk ends whole, with an end token, within the budget. Without the budget the same
// walks run past it (the schema's strings and arrays are unbounded).
TEST_F(ConstraintTest, ABudgetedWalkEndsWholeWithinItsTokens) {
  const std::shared_ptr<const Constraint> constraint = SchemaConstraint(R"({
      "type": "object", "properties": {"names": {"type": "array", "items": {"type": "string"}},
      "n": {"type": "integer"}}, "required": ["names", "n"]})");
  // {"names":[],"n":0}: 18 bytes, and the end token.
  const int32_t shortest = 18;
  int32_t unbounded_past_budget = 0;
  for (int32_t budget : {shortest + 1, shortest + 2, shortest + 5, 30, 60}) {
    for (uint32_t seed = 0; seed < 20; ++seed) {
      std::mt19937 random(seed);
      for (const bool bounded : {true, false}) {
        ConstraintMatcher matcher(constraint);
        int32_t used = 0;
        while (!matcher.ended() && used < budget) {
          const std::shared_ptr<const TokenMask> mask =
              (bounded ? matcher.NextTokens(budget - used) : matcher.NextTokens()).value();
          std::vector<int32_t> allowed;
          mask->ForEach([&](int32_t token) { allowed.push_back(token); });
          ASSERT_FALSE(allowed.empty());
          ASSERT_TRUE(matcher.Accept(allowed[random() % allowed.size()]).ok());
          ++used;
        }
        if (bounded) {
          EXPECT_TRUE(matcher.ended()) << "budget " << budget << ", seed " << seed;
        } else {
          unbounded_past_budget += !matcher.ended();
        }
      }
    }
  }
  EXPECT_GT(unbounded_past_budget, 50);
}

TEST_F(ConstraintTest, ABudgetTooSmallForAnySentenceLeavesTheMaskAsItWas) {
  const std::shared_ptr<const Constraint> constraint =
      SchemaConstraint(R"({"type": "array", "items": {"type": "integer"}, "minItems": 3})");
  ConstraintMatcher matcher(constraint);
  EXPECT_EQ(matcher.NextTokens(4).value()->count(), matcher.NextTokens().value()->count());
}

}  // namespace
}  // namespace kvd::structured
