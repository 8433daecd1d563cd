// Structured outputs in the scheduler: whatever the bundled model would write, a constrained
// request's every completion is a whole value of its constraint, ended by end-of-sequence.
#include <memory>
#include <random>
#include <string>

#include "gmock/gmock.h"
#include "nlohmann/json.hpp"
#include "structured/json_schema_grammar.h"
#include "structured/stack_space.h"
#include "tests/unit/scheduler/scheduler_fixture.h"

namespace kvd::scheduler::testing {
namespace {

constexpr const char* kSchema = R"({
  "type": "object",
  "properties": {"answer": {"type": "string", "maxLength": 20},
                 "score": {"type": "integer"},
                 "flags": {"type": "array", "items": {"type": "boolean"}, "maxItems": 3}},
  "required": ["answer", "score", "flags"], "additionalProperties": false})";

class ConstrainedTest : public SchedulerTest {
 protected:
  static std::shared_ptr<const structured::Constraint> SchemaConstraint() {
    static const auto* trie = new std::shared_ptr<const structured::TokenTrie>(
        structured::TokenTrie::Create(*tokenizer_, {873, 870}).value());
    return std::make_shared<const structured::Constraint>(
        structured::CompileJsonSchema(structured::JsonValue::parse(kSchema),
                                      structured::JsonWhitespace::kCompact)
            .value(),
        *trie);
  }

  static bool Valid(const structured::Grammar& grammar, const std::string& text) {
    structured::StackSpace stacks(grammar, 1 << 20);
    std::vector<int32_t> state = stacks.initial(), next;
    for (char c : text) {
      stacks.StepAll(state, static_cast<uint8_t>(c), next);
      state.swap(next);
    }
    return !state.empty() && state.front() == structured::StackSpace::kAccepted;
  }
};

TEST_F(ConstrainedTest, EveryCompletionIsAWholeValueEndedByEndOfSequence) {
  auto scheduler = NewScheduler(SmallConfig());
  const auto constraint = SchemaConstraint();
  std::mt19937 random(3);
  int32_t stopped = 0;
  for (int32_t i = 0; i < 12; ++i) {
    Request request;
    request.prompt = RandomPrompt(random, 8);
    request.sampling = {.temperature = 1.0f, .seed = 100 + static_cast<uint64_t>(i)};
    request.max_tokens = 200;
    request.n = 2;
    request.constraint = constraint;
    RequestHandle handle = scheduler->Submit(std::move(request)).value();
    RunUntilIdle(*scheduler);
    Outcome outcome;
    Drain(handle, outcome);
    ASSERT_TRUE(outcome.status.ok()) << outcome.status;
    for (size_t choice = 0; choice < outcome.text.size(); ++choice) {
      const std::string& text = outcome.text[choice];
      if (outcome.finish[choice] == FinishReason::kLength) continue;  // cut by max_tokens
      ++stopped;
      ASSERT_TRUE(Valid(constraint->grammar(), text)) << text;
      const nlohmann::json value = nlohmann::json::parse(text);
      EXPECT_LE(value["answer"].get<std::string>().size(), 80u);
      EXPECT_TRUE(value["score"].is_number_integer());
      EXPECT_LE(value["flags"].size(), 3u);
    }
  }
  EXPECT_GT(stopped, 12) << "most completions end within 200 tokens";
}

TEST_F(ConstrainedTest, GreedyTakesTheMostLikelyAllowedTokenAndEndsTheValue) {
  auto scheduler = NewScheduler(SmallConfig());
  Request request;
  std::mt19937 random(4);
  request.prompt = RandomPrompt(random, 6);
  request.sampling.temperature = 0.0f;
  request.max_tokens = 300;
  request.constraint = SchemaConstraint();
  RequestHandle handle = scheduler->Submit(std::move(request)).value();
  RunUntilIdle(*scheduler);
  Outcome outcome;
  Drain(handle, outcome);
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  ASSERT_EQ(outcome.finish[0], FinishReason::kStop);
  EXPECT_TRUE(Valid(SchemaConstraint()->grammar(), outcome.text[0])) << outcome.text[0];
  const MetricsSnapshot metrics = scheduler->Metrics();
  EXPECT_EQ(metrics.constrained_requests, 1u);
  EXPECT_GT(metrics.constraint_mask_seconds_total, 0.0);
}

TEST_F(ConstrainedTest, RefusesWhatAConstraintCannotHonour) {
  auto scheduler = NewScheduler(SmallConfig());
  std::mt19937 random(5);
  Request ignore_eos;
  ignore_eos.prompt = RandomPrompt(random, 4);
  ignore_eos.ignore_eos = true;
  ignore_eos.constraint = SchemaConstraint();
  EXPECT_THAT(scheduler->Submit(ignore_eos).status().message(),
              ::testing::HasSubstr("ignore_eos"));
  Request min_tokens = ignore_eos;
  min_tokens.ignore_eos = false;
  min_tokens.min_tokens = 3;
  EXPECT_THAT(scheduler->Submit(min_tokens).status().message(),
              ::testing::HasSubstr("min_tokens"));
}

}  // namespace
}  // namespace kvd::scheduler::testing
