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

  // Strings of many lengths at once: each position inside the string is a state of its own
  // whose mask walks every branch, so masks cost far more than the bundled model's step.
  static std::shared_ptr<const structured::Constraint> SlowMaskConstraint() {
    static const auto* trie = new std::shared_ptr<const structured::TokenTrie>(
        structured::TokenTrie::Create(*tokenizer_, {873, 870}).value());
    structured::JsonValue branches = structured::JsonValue::array();
    for (int32_t i = 0; i < 60; ++i) {
      branches.push_back({{"type", "string"}, {"minLength", i % 7}, {"maxLength", 20 + i}});
    }
    return std::make_shared<const structured::Constraint>(
        structured::CompileJsonSchema(structured::JsonValue{{"anyOf", branches}},
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

  // Constrained requests of every kind: greedy, sampled with seeds, several choices.
  static std::vector<Request> MixedConstrainedRequests(
      std::shared_ptr<const structured::Constraint> schema, std::mt19937& random) {
    std::vector<Request> requests;
    for (int32_t i = 0; i < 6; ++i) {
      Request request;
      request.prompt = RandomPrompt(random, 6 + i);
      request.sampling = {.temperature = i % 3 == 0 ? 0.0f : 1.0f,
                          .seed = 40 + static_cast<uint64_t>(i)};
      request.max_tokens = 120;
      request.n = i % 2 == 0 ? 1 : 2;
      request.constraint = schema;
      requests.push_back(std::move(request));
    }
    return requests;
  }

  // Runs `requests` on the scheduler's own thread, all submitted at once; their outcomes.
  static std::vector<Outcome> RunConcurrently(Scheduler& scheduler,
                                              const std::vector<Request>& requests) {
    scheduler.Start();
    std::vector<RequestHandle> handles;
    for (const Request& request : requests) handles.push_back(scheduler.Submit(request).value());
    std::vector<Outcome> outcomes(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) DrainToEnd(handles[i], outcomes[i]);
    return outcomes;
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
  EXPECT_THAT(scheduler->Submit(ignore_eos).status().message(), ::testing::HasSubstr("ignore_eos"));
  Request min_tokens = ignore_eos;
  min_tokens.ignore_eos = false;
  min_tokens.min_tokens = 3;
  EXPECT_THAT(scheduler->Submit(min_tokens).status().message(), ::testing::HasSubstr("min_tokens"));
}

// Masks built by constraint workers while the forward pass runs leave every output as masks
// built in the step do: a sample whose mask is late waits in its saved logit row, and a draft
// verification stops where a mask is late.
TEST_F(ConstrainedTest, WorkersLeaveEveryOutputAsTheStepDoes) {
  std::mt19937 random(6);
  std::vector<Request> requests = MixedConstrainedRequests(SchemaConstraint(), random);
  for (Request& request : MixedConstrainedRequests(SlowMaskConstraint(), random)) {
    requests.push_back(std::move(request));
  }
  std::vector<Outcome> expected;
  {
    auto scheduler = NewScheduler(SmallConfig());
    std::vector<RequestHandle> handles;
    for (const Request& request : requests) handles.push_back(scheduler->Submit(request).value());
    RunUntilIdle(*scheduler);
    expected.resize(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) Drain(handles[i], expected[i]);
  }
  for (const bool speculative : {false, true}) {
    SCOPED_TRACE(speculative ? "with n-gram drafts" : "one token per step");
    SchedulerConfig config = SmallConfig();
    config.constraint_threads = 2;
    if (speculative) config.speculative = {.method = SpeculativeMethod::kNgram};
    auto scheduler = NewScheduler(config);
    const std::vector<Outcome> outcomes = RunConcurrently(*scheduler, requests);
    for (size_t i = 0; i < requests.size(); ++i) {
      ASSERT_TRUE(expected[i].ended && outcomes[i].ended) << "request " << i;
      EXPECT_TRUE(outcomes[i].status.ok()) << outcomes[i].status;
      EXPECT_EQ(outcomes[i].tokens, expected[i].tokens) << "request " << i;
      EXPECT_EQ(outcomes[i].finish, expected[i].finish) << "request " << i;
    }
    const MetricsSnapshot metrics = scheduler->Metrics();
    EXPECT_GT(metrics.constraint_mask_seconds_total, 0.0);
    // A fresh state of the slow constraint walks for far longer than the bundled model's step:
    // samples waited for their masks (hundreds of times in a run).
    EXPECT_GT(metrics.constraint_mask_skipped_steps, 0u);
    scheduler->Stop();
    EXPECT_EQ(scheduler->Metrics().kv_blocks_free, scheduler->Metrics().kv_blocks_total)
        << "blocks leaked";
  }
}

}  // namespace
}  // namespace kvd::scheduler::testing
