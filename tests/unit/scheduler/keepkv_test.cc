// KeepKV in the scheduler: budgets hold while requests run batched, forked and preempted, the
// outputs do not depend on batching, nothing leaks, and the metrics count the work.
#include <gtest/gtest.h>

#include "scheduler/scheduler.h"
#include "tests/unit/scheduler/scheduler_fixture.h"

namespace kvd::scheduler::testing {
namespace {

using cache_store::KeepKvParams;
using cache_store::MergeMethod;

class KeepKvSchedulerTest : public SchedulerTest {
 protected:
  static Request Bounded(std::mt19937& random, int32_t prompt, int32_t max_tokens, int32_t budget) {
    Request request = Greedy(RandomPrompt(random, prompt), max_tokens);
    KeepKvParams params;
    params.budget.tokens = budget;
    request.keepkv = params;
    return request;
  }

  static Outcome RunAlone(Scheduler& scheduler, const Request& request) {
    auto handle = scheduler.Submit(request);
    EXPECT_TRUE(handle.ok()) << handle.status();
    Outcome outcome;
    while (scheduler.HasWork()) {
      EXPECT_TRUE(scheduler.Step().ok());
      Drain(*handle, outcome);
    }
    return outcome;
  }
};

TEST_F(KeepKvSchedulerTest, BudgetHoldsInABatchAndRunsRepeat) {
  std::mt19937 random(17);
  std::vector<Request> requests;
  for (int i = 0; i < 6; ++i) requests.push_back(Bounded(random, 200 + 20 * i, 24, 64));
  requests[2].n = 2;
  requests[4].keepkv->method = MergeMethod::kGroupMean;
  requests[5].keepkv->selection = cache_store::MergeSelection::kSimilarPairs;
  const auto& config = model_->config();
  const int32_t heads = config.num_layers * config.num_kv_heads;
  // Batched runs are reproducible (a batch's matrix products may round differently from a
  // single sequence's, so the merges, and the outputs, of one request alone may differ).
  std::vector<std::vector<Outcome>> runs;
  for (int run = 0; run < 2; ++run) {
    auto scheduler = NewScheduler(SmallConfig());
    std::vector<RequestHandle> handles;
    for (const Request& request : requests) handles.push_back(*scheduler->Submit(request));
    std::vector<Outcome> outcomes(requests.size());
    while (scheduler->HasWork()) {
      ASSERT_TRUE(scheduler->Step().ok());
      const MetricsSnapshot metrics = scheduler->Metrics();
      // Seven sequences of at most 64 entries per (layer, kv head), 4 blocks of 16 each (5 while
      // a step's token is appended before the compaction), plus prompts still being computed
      // in chunks of 256 tokens.
      EXPECT_LE(metrics.kv_blocks_total - metrics.kv_blocks_free, (7 * 5 + 2 * 19) * heads);
      if (metrics.keepkv_sequences > 0) {
        EXPECT_GT(metrics.keepkv_compressed_fraction, 0.5);
      }
      for (size_t i = 0; i < handles.size(); ++i) Drain(handles[i], outcomes[i]);
    }
    for (size_t i = 0; i < requests.size(); ++i) {
      ASSERT_TRUE(outcomes[i].ended) << i;
      EXPECT_TRUE(outcomes[i].status.ok()) << outcomes[i].status;
      EXPECT_EQ(outcomes[i].usage.completion_tokens, requests[i].n * 24);
    }
    const MetricsSnapshot metrics = scheduler->Metrics();
    EXPECT_EQ(metrics.kv_blocks_free, metrics.kv_blocks_total);
    EXPECT_EQ(metrics.keepkv_sequences, 0);
    // Every prompt of 200+ tokens went down to under 64 entries per (layer, kv head).
    EXPECT_GE(metrics.keepkv_merges + metrics.keepkv_evictions, uint64_t{6 * 136} * heads);
    EXPECT_GT(metrics.keepkv_merges, 0u);
    runs.push_back(std::move(outcomes));
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(runs[0][i].tokens, runs[1][i].tokens) << "request " << i;
  }
}

TEST_F(KeepKvSchedulerTest, ABudgetOverTheWholeSequenceChangesNothing) {
  std::mt19937 random(3);
  Request bounded = Bounded(random, 120, 16, 200);
  Request plain = bounded;
  plain.keepkv.reset();
  auto scheduler = NewScheduler(SmallConfig());
  const Outcome with_budget = RunAlone(*scheduler, bounded);
  const Outcome without = RunAlone(*scheduler, plain);
  EXPECT_EQ(with_budget.tokens, without.tokens);
  const MetricsSnapshot metrics = scheduler->Metrics();
  EXPECT_EQ(metrics.keepkv_merges + metrics.keepkv_evictions, 0u);
}

TEST_F(KeepKvSchedulerTest, RefreshesRunOnTheirPeriod) {
  std::mt19937 random(5);
  Request request = Bounded(random, 150, 30, 48);
  request.keepkv->refresh_every = 8;
  auto scheduler = NewScheduler(SmallConfig());
  const Outcome outcome = RunAlone(*scheduler, request);
  ASSERT_TRUE(outcome.ended);
  EXPECT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_EQ(outcome.tokens[0].size(), 30u);
  const MetricsSnapshot metrics = scheduler->Metrics();
  EXPECT_EQ(metrics.keepkv_refreshes, 3u);  // after decode steps 8, 16 and 24
  EXPECT_EQ(metrics.kv_blocks_free, metrics.kv_blocks_total);
}

TEST_F(KeepKvSchedulerTest, PreemptedSequencesCompactAgainWhenRecomputed) {
  std::mt19937 random(9);
  // Unbounded sequences first, which grow until the pool is full, then bounded ones, which
  // are the latest and so the first preempted.
  std::vector<Request> requests;
  for (int i = 0; i < 2; ++i) requests.push_back(Greedy(RandomPrompt(random, 60), 150));
  for (int i = 0; i < 6; ++i) requests.push_back(Bounded(random, 100, 40, 32));
  SchedulerConfig config = SmallConfig();
  config.kv_cache_bytes = KvBytesForTokens(260);
  auto scheduler = NewScheduler(config);
  std::vector<RequestHandle> handles;
  for (const Request& request : requests) handles.push_back(*scheduler->Submit(request));
  RunUntilIdle(*scheduler);
  for (size_t i = 0; i < handles.size(); ++i) {
    Outcome outcome;
    Drain(handles[i], outcome);
    ASSERT_TRUE(outcome.ended);
    EXPECT_TRUE(outcome.status.ok()) << outcome.status;
    EXPECT_EQ(outcome.tokens[0].size(), static_cast<size_t>(requests[i].max_tokens));
  }
  const MetricsSnapshot metrics = scheduler->Metrics();
  EXPECT_GT(metrics.preemptions, 0u);
  EXPECT_EQ(metrics.kv_blocks_free, metrics.kv_blocks_total);
}

TEST_F(KeepKvSchedulerTest, InvalidParametersAreRefusedAtSubmit) {
  std::mt19937 random(1);
  Request request = Bounded(random, 20, 4, 8);
  request.keepkv->alpha = 1.0;
  auto scheduler = NewScheduler(SmallConfig());
  auto handle = scheduler->Submit(request);
  ASSERT_FALSE(handle.ok());
  EXPECT_EQ(handle.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(handle.status().message().find("keepkv.alpha"), std::string::npos);
}

}  // namespace
}  // namespace kvd::scheduler::testing
