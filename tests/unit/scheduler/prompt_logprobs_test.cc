// Prompt logprobs (Request::prompt_logprobs): each prompt token's logprob is the engine's own
// log-softmax of the logit row before it, whether the prompt is computed in one step or in
// chunks, beside other sequences, with or without generation (max_tokens 0 scores only); and
// what cannot be combined with it is refused.
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "engine/kv_cache.h"
#include "gtest/gtest.h"
#include "tests/unit/scheduler/scheduler_fixture.h"

namespace kvd::scheduler::testing {
namespace {

class PromptLogprobsTest : public SchedulerTest {
 protected:
  // log p(prompt[i] | prompt[0..i)) for i ≥ 1, from one forward step over the whole prompt.
  static std::vector<double> Reference(const std::vector<int32_t>& prompt) {
    const engine::ModelConfig& config = model_->config();
    auto pool = engine::KvBlockPool::Create(
                    *backend_, {.num_blocks = 64 * config.num_layers * config.num_kv_heads,
                                .block_size = 16,
                                .head_dim = config.head_dim})
                    .value();
    engine::SequenceKv kv(config.num_layers, config.num_kv_heads);
    EXPECT_TRUE(kv.Reserve(*pool, static_cast<int32_t>(prompt.size())).ok());
    engine::StepLogits logits;
    const engine::SequenceStep step{&kv, prompt, engine::LogitRows::kAll};
    EXPECT_TRUE(model_->Forward({&step, 1}, *pool, logits).ok());
    std::vector<double> reference;
    for (size_t i = 1; i < prompt.size(); ++i) {
      const std::span<const float> row = logits.row(static_cast<int32_t>(i - 1));
      double largest = -INFINITY;
      for (float logit : row) largest = std::max(largest, double{logit});
      double sum = 0.0;
      for (float logit : row) sum += std::exp(double{logit} - largest);
      reference.push_back(double{row[prompt[i]]} - largest - std::log(sum));
    }
    kv.Release(*pool);
    return reference;
  }

  // The prompt logprobs of each choice's first event, and the outcome.
  struct Scored {
    std::vector<std::vector<engine::SampledToken>> prompt_logprobs;  // per choice
    Outcome outcome;
  };
  static Scored Run(Scheduler& scheduler, std::vector<Request> requests) {
    std::vector<RequestHandle> handles;
    for (Request& request : requests) {
      auto handle = scheduler.Submit(std::move(request));
      EXPECT_TRUE(handle.ok()) << handle.status();
      handles.push_back(*std::move(handle));
    }
    Scored scored;
    while (scheduler.HasWork()) {
      EXPECT_TRUE(scheduler.Step().ok());
      while (auto event = handles[0].Next(absl::ZeroDuration())) {
        if (event->final) {
          scored.outcome.ended = true;
          scored.outcome.status = event->status;
          scored.outcome.usage = event->usage;
          continue;
        }
        if (!event->prompt_logprobs.empty()) {
          scored.prompt_logprobs.resize(
              std::max<size_t>(scored.prompt_logprobs.size(), event->index + 1));
          EXPECT_TRUE(scored.prompt_logprobs[event->index].empty()) << "sent twice";
          scored.prompt_logprobs[event->index] = event->prompt_logprobs;
        }
        scored.outcome.finish.resize(
            std::max<size_t>(scored.outcome.finish.size(), event->index + 1));
        if (event->finish_reason) scored.outcome.finish[event->index] = event->finish_reason;
      }
      for (size_t i = 1; i < handles.size(); ++i) {
        while (handles[i].Next(absl::ZeroDuration())) {
        }
      }
    }
    return scored;
  }

  static void ExpectMatches(const std::vector<engine::SampledToken>& scored,
                            const std::vector<int32_t>& prompt, int32_t alternatives) {
    const std::vector<double> reference = Reference(prompt);
    ASSERT_EQ(scored.size(), reference.size());
    for (size_t i = 0; i < scored.size(); ++i) {
      EXPECT_EQ(scored[i].token, prompt[i + 1]) << i;
      EXPECT_NEAR(scored[i].logprob, reference[i], 1e-4) << "position " << i + 1;
      EXPECT_EQ(scored[i].top_logprobs.size(), static_cast<size_t>(alternatives)) << i;
      for (size_t k = 1; k < scored[i].top_logprobs.size(); ++k) {
        EXPECT_GE(scored[i].top_logprobs[k - 1].logprob, scored[i].top_logprobs[k].logprob);
      }
      if (!scored[i].top_logprobs.empty()) {
        EXPECT_GE(scored[i].top_logprobs[0].logprob, scored[i].logprob - 1e-6);
      }
    }
  }
};

TEST_F(PromptLogprobsTest, EqualTheEnginesOwnLogSoftmaxInOneStepOrInChunks) {
  std::mt19937 random(7);
  const std::vector<int32_t> prompt = RandomPrompt(random, 100);
  for (const int32_t chunk : {256, 32, 7}) {
    SchedulerConfig config = SmallConfig();
    config.max_num_batched_tokens = chunk;
    config.max_num_seqs = 4;
    auto scheduler = NewScheduler(config);
    // Another sequence decodes beside it, so that its rows sit among others'.
    Request scored = Greedy(prompt, 3);
    scored.prompt_logprobs = 2;
    const Scored result = Run(*scheduler, {scored, Greedy(RandomPrompt(random, 20), 30)});
    ASSERT_TRUE(result.outcome.status.ok()) << result.outcome.status;
    ASSERT_EQ(result.prompt_logprobs.size(), 1u) << "chunk " << chunk;
    ExpectMatches(result.prompt_logprobs[0], prompt, 2);
    EXPECT_EQ(result.outcome.finish[0], FinishReason::kLength);
  }
}

TEST_F(PromptLogprobsTest, MaxTokensZeroScoresThePromptOnly) {
  std::mt19937 random(11);
  const std::vector<int32_t> prompt = RandomPrompt(random, 40);
  auto scheduler = NewScheduler(SmallConfig());
  Request request = Greedy(prompt, 0);
  request.prompt_logprobs = 0;
  const Scored result = Run(*scheduler, {request});
  ASSERT_TRUE(result.outcome.ended && result.outcome.status.ok()) << result.outcome.status;
  ASSERT_EQ(result.prompt_logprobs.size(), 1u);
  ExpectMatches(result.prompt_logprobs[0], prompt, 0);
  EXPECT_EQ(result.outcome.finish[0], FinishReason::kLength);
  EXPECT_EQ(result.outcome.usage.completion_tokens, 0);
}

TEST_F(PromptLogprobsTest, EachOfNChoicesCarriesThem) {
  std::mt19937 random(13);
  const std::vector<int32_t> prompt = RandomPrompt(random, 30);
  auto scheduler = NewScheduler(SmallConfig());
  Request request = Greedy(prompt, 2);
  request.n = 3;
  request.prompt_logprobs = 1;
  const Scored result = Run(*scheduler, {request});
  ASSERT_EQ(result.prompt_logprobs.size(), 3u);
  for (const auto& choice : result.prompt_logprobs) ExpectMatches(choice, prompt, 1);
}

TEST_F(PromptLogprobsTest, RefusesWhatCannotBeScored) {
  auto scheduler = NewScheduler(SmallConfig());
  std::mt19937 random(17);
  Request zero = Greedy(RandomPrompt(random, 10), 0);
  EXPECT_FALSE(scheduler->Submit(zero).ok()) << "max_tokens 0 without prompt_logprobs";
  zero.prompt_logprobs = 0;
  zero.n = 2;
  EXPECT_FALSE(scheduler->Submit(zero).ok()) << "max_tokens 0 with n 2";
  Request wide = Greedy(RandomPrompt(random, 10), 1);
  wide.prompt_logprobs = 21;
  EXPECT_FALSE(scheduler->Submit(wide).ok());
  Request budget = Greedy(RandomPrompt(random, 10), 1);
  budget.prompt_logprobs = 0;
  budget.keepkv = cache_store::KeepKvParams{};
  EXPECT_FALSE(scheduler->Submit(budget).ok());
}

}  // namespace
}  // namespace kvd::scheduler::testing
