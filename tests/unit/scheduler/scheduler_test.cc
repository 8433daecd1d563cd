#include "scheduler/scheduler.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "tests/support/source_dir.h"
#include "tests/unit/scheduler/scheduler_fixture.h"

namespace kvd::scheduler::testing {
namespace {

// Runs each request alone, one after another: the reference for batched runs.
std::vector<Outcome> RunOneAtATime(SchedulerTest& test, Scheduler& scheduler,
                                   const std::vector<Request>& requests) {
  std::vector<Outcome> outcomes(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    auto handle = scheduler.Submit(requests[i]);
    EXPECT_TRUE(handle.ok()) << handle.status();
    while (scheduler.HasWork()) EXPECT_TRUE(scheduler.Step().ok());
    Drain(*handle, outcomes[i]);
  }
  return outcomes;
}

// Submits every request at once and steps until all are done.
std::vector<Outcome> RunTogether(Scheduler& scheduler, const std::vector<Request>& requests,
                                 int32_t* max_batch = nullptr) {
  std::vector<RequestHandle> handles;
  for (const Request& request : requests) {
    auto handle = scheduler.Submit(request);
    EXPECT_TRUE(handle.ok()) << handle.status();
    handles.push_back(*std::move(handle));
  }
  std::vector<Outcome> outcomes(requests.size());
  while (scheduler.HasWork()) {
    auto report = scheduler.Step();
    EXPECT_TRUE(report.ok()) << report.status();
    if (max_batch != nullptr) *max_batch = std::max(*max_batch, report->num_sequences);
    for (size_t i = 0; i < handles.size(); ++i) Drain(handles[i], outcomes[i]);
  }
  return outcomes;
}

std::vector<Request> MixedGreedyRequests(int32_t count, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int32_t> prompt_length(4, 300);
  std::uniform_int_distribution<int32_t> max_tokens(1, 40);
  std::vector<Request> requests;
  for (int32_t i = 0; i < count; ++i) {
    // One draw after another, so that every compiler makes the same requests.
    const int32_t tokens = max_tokens(random);
    const int32_t length = prompt_length(random);
    requests.push_back(SchedulerTest::Greedy(SchedulerTest::RandomPrompt(random, length), tokens));
  }
  return requests;
}

void ExpectSameOutputs(const std::vector<Outcome>& actual, const std::vector<Outcome>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_TRUE(actual[i].ended) << "request " << i;
    EXPECT_TRUE(actual[i].status.ok()) << actual[i].status;
    EXPECT_EQ(actual[i].tokens, expected[i].tokens) << "request " << i;
    EXPECT_EQ(actual[i].text, expected[i].text) << "request " << i;
    EXPECT_EQ(actual[i].finish, expected[i].finish) << "request " << i;
    EXPECT_EQ(actual[i].usage.completion_tokens, expected[i].usage.completion_tokens);
  }
}

TEST_F(SchedulerTest, BatchedGreedyOutputsEqualOneAtATime) {
  const std::vector<Request> requests = MixedGreedyRequests(64, 7);
  auto alone = NewScheduler(SmallConfig());
  const std::vector<Outcome> expected = RunOneAtATime(*this, *alone, requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    ASSERT_EQ(expected[i].tokens.at(0).size(), static_cast<size_t>(requests[i].max_tokens));
    EXPECT_EQ(expected[i].finish[0], FinishReason::kLength);
    EXPECT_EQ(expected[i].usage.prompt_tokens, static_cast<int32_t>(requests[i].prompt.size()));
  }

  // 256 tokens per step: long prompts are split into chunks that ride along with decodes.
  auto batched = NewScheduler(SmallConfig());
  int32_t max_batch = 0;
  const std::vector<Outcome> together = RunTogether(*batched, requests, &max_batch);
  ExpectSameOutputs(together, expected);
  EXPECT_GT(max_batch, 32);
  const MetricsSnapshot metrics = batched->Metrics();
  EXPECT_EQ(metrics.kv_blocks_free, metrics.kv_blocks_total);
  EXPECT_EQ(metrics.num_running, 0);
  EXPECT_EQ(metrics.preemptions, 0u);
}

TEST_F(SchedulerTest, GreedyOutputsMatchThePyTorchReference) {
  const std::vector<engine::testing::ReferenceCase> cases = engine::testing::LoadReferenceCases();
  ASSERT_FALSE(cases.empty());
  std::vector<Request> requests;
  for (const auto& c : cases) {
    requests.push_back(Greedy(c.input_ids, static_cast<int32_t>(c.greedy_ids.size())));
  }
  auto scheduler = NewScheduler(SmallConfig());
  const std::vector<Outcome> outcomes = RunTogether(*scheduler, requests);
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(outcomes[i].tokens.at(0), cases[i].greedy_ids) << cases[i].name;
  }
}

TEST_F(SchedulerTest, PreemptionByRecomputeLeavesOutputsUnchanged) {
  std::vector<Request> requests = MixedGreedyRequests(24, 11);
  // Seeded sampling must also survive preemption: its random stream stays with the sequence.
  for (size_t i = 0; i < requests.size(); i += 3) {
    requests[i].sampling.temperature = 0.9f;
    requests[i].sampling.seed = 100 + i;
  }
  auto alone = NewScheduler(SmallConfig());
  const std::vector<Outcome> expected = RunOneAtATime(*this, *alone, requests);

  // Room for about 2.5 of the longest sequences at once.
  SchedulerConfig tight = SmallConfig();
  tight.kv_cache_bytes = KvBytesForTokens(850);
  auto scheduler = NewScheduler(tight);
  const std::vector<Outcome> together = RunTogether(*scheduler, requests);
  ExpectSameOutputs(together, expected);
  const MetricsSnapshot metrics = scheduler->Metrics();
  EXPECT_GT(metrics.preemptions, 0u);
  EXPECT_EQ(metrics.kv_blocks_free, metrics.kv_blocks_total);
}

TEST_F(SchedulerTest, PreemptionTakesTheLatestOfTheWorstPriority) {
  std::vector<Request> requests = MixedGreedyRequests(8, 17);
  for (Request& request : requests) request.max_tokens = 40;
  requests[6].priority = -1;  // submitted late, served first
  SchedulerConfig tight = SmallConfig();
  tight.kv_cache_bytes = KvBytesForTokens(600);
  auto scheduler = NewScheduler(tight);
  std::vector<RequestHandle> handles;
  for (const Request& request : requests) handles.push_back(*scheduler->Submit(request));
  std::vector<uint64_t> preempted;
  while (scheduler->HasWork()) {
    auto report = scheduler->Step();
    ASSERT_TRUE(report.ok());
    preempted.insert(preempted.end(), report->preempted.begin(), report->preempted.end());
  }
  ASSERT_FALSE(preempted.empty());
  for (uint64_t id : preempted) {
    EXPECT_NE(id, handles[6].id()) << "the best priority is never preempted";
    EXPECT_NE(id, handles[0].id()) << "nor the earliest of the others";
  }
  for (RequestHandle& handle : handles) {
    Outcome outcome;
    Drain(handle, outcome);
    EXPECT_EQ(outcome.tokens.at(0).size(), 40u);
  }
}

TEST_F(SchedulerTest, LongPromptIsChunkedWithoutStallingDecodes) {
  auto scheduler = NewScheduler(SmallConfig());  // 256 tokens per step
  std::mt19937 random(12);
  auto decoding = scheduler->Submit(Greedy(RandomPrompt(random, 10), 30));
  ASSERT_TRUE(decoding.ok());
  ASSERT_TRUE(scheduler->Step().ok());
  Outcome first;
  Drain(*decoding, first);
  auto long_prompt = scheduler->Submit(Greedy(RandomPrompt(random, 1500), 4));
  ASSERT_TRUE(long_prompt.ok());
  int32_t prefill_steps = 0;
  for (int step = 0; step < 8; ++step) {
    auto report = scheduler->Step();
    ASSERT_TRUE(report.ok());
    if (report->num_prefill_tokens > 0) ++prefill_steps;
    EXPECT_LE(report->num_prefill_tokens + report->num_decode_tokens, 256);
    Outcome outcome;
    Drain(*decoding, outcome);
    ASSERT_EQ(outcome.tokens.size(), 1u) << "step " << step;
    EXPECT_EQ(outcome.tokens[0].size(), 1u) << "the decode got its token in step " << step;
  }
  EXPECT_EQ(prefill_steps, 6);  // 1500 tokens in chunks of 255
  RunUntilIdle(*scheduler);
}

// A step returns as many top logits per row as its neediest sampler asks for: one for greedy
// picks, their alternatives when they report some, the most a step gives once a row draws.
TEST_F(SchedulerTest, AStepReturnsTheTopLogitsItsRowsNeed) {
  auto scheduler = NewScheduler(SmallConfig());
  std::mt19937 random(13);
  const auto top_logits_of_next_step = [&] {
    auto report = scheduler->Step();
    EXPECT_TRUE(report.ok());
    return report.ok() ? report->top_logits : -1;
  };
  std::vector<RequestHandle> handles;
  handles.push_back(*scheduler->Submit(Greedy(RandomPrompt(random, 12), 40)));
  EXPECT_EQ(top_logits_of_next_step(), 1);
  Request alternatives = Greedy(RandomPrompt(random, 12), 40);
  alternatives.sampling.logprobs = true;
  alternatives.sampling.top_logprobs = 5;
  handles.push_back(*scheduler->Submit(alternatives));
  EXPECT_EQ(top_logits_of_next_step(), 5);
  Request drawn = Greedy(RandomPrompt(random, 12), 40);
  drawn.sampling.temperature = 0.8f;
  handles.push_back(*scheduler->Submit(drawn));
  EXPECT_EQ(top_logits_of_next_step(), kernels::kMaxTopLogits);
  for (RequestHandle& handle : handles) handle.Cancel();
  RunUntilIdle(*scheduler);
}

TEST_F(SchedulerTest, CancellationUnderLoadReturnsEveryBlock) {
  std::vector<Request> requests = MixedGreedyRequests(40, 3);
  for (Request& request : requests) request.max_tokens = 40;
  requests[5].n = 3;
  requests[30].n = 2;
  SchedulerConfig config = SmallConfig();
  config.max_num_seqs = 16;
  config.kv_cache_bytes = KvBytesForTokens(2000);
  auto scheduler = NewScheduler(config);
  std::vector<RequestHandle> handles;
  for (const Request& request : requests) handles.push_back(*scheduler->Submit(request));
  for (int step = 0; step < 6; ++step) ASSERT_TRUE(scheduler->Step().ok());
  EXPECT_GT(scheduler->Metrics().num_running, 0);
  EXPECT_GT(scheduler->Metrics().num_waiting, 0);
  // Running and waiting ones alike, the forked request among them.
  for (size_t i = 0; i < handles.size(); i += 2) handles[i].Cancel();
  handles[5].Cancel();
  ASSERT_TRUE(scheduler->Step().ok());
  for (size_t i = 0; i < handles.size(); i += 2) {
    Outcome outcome;
    Drain(handles[i], outcome);
    EXPECT_TRUE(outcome.ended) << "cancelled request " << i << " ended within one step";
    for (const auto& finish : outcome.finish) EXPECT_EQ(finish, FinishReason::kAbort);
  }
  Outcome forked;
  Drain(handles[5], forked);
  ASSERT_TRUE(forked.ended);
  ASSERT_EQ(forked.finish.size(), 3u);
  for (const auto& finish : forked.finish) EXPECT_EQ(finish, FinishReason::kAbort);

  // Dropping a handle cancels too.
  handles[7] = RequestHandle();
  for (int step = 0; step < 3; ++step) ASSERT_TRUE(scheduler->Step().ok());
  for (size_t i = 1; i < handles.size(); i += 2) {
    if (i != 7) handles[i].Cancel();
  }
  RunUntilIdle(*scheduler);
  const MetricsSnapshot metrics = scheduler->Metrics();
  EXPECT_EQ(metrics.kv_blocks_free, metrics.kv_blocks_total);
  EXPECT_EQ(metrics.num_running + metrics.num_waiting, 0);
  EXPECT_GT(metrics.finished_sequences.at(FinishReason::kAbort), 0u);
}

TEST_F(SchedulerTest, CompletionsOfOnePromptShareItsBlocks) {
  std::mt19937 random(5);
  Request request = Greedy(RandomPrompt(random, 100), 8);
  request.n = 4;
  auto scheduler = NewScheduler(SmallConfig());
  auto handle = scheduler->Submit(request);
  ASSERT_TRUE(handle.ok());
  const auto& config = model_->config();
  const int32_t heads = config.num_layers * config.num_kv_heads;
  const int32_t prompt_blocks = (100 + 15) / 16;  // 7, the last one partially filled

  ASSERT_TRUE(scheduler->Step().ok());  // the prompt, once; four first tokens from its logits
  MetricsSnapshot metrics = scheduler->Metrics();
  EXPECT_EQ(metrics.num_running, 4);
  EXPECT_EQ(metrics.kv_blocks_total - metrics.kv_blocks_free, prompt_blocks * heads);
  ASSERT_TRUE(scheduler->Step().ok());  // three of four copy the shared partial block
  metrics = scheduler->Metrics();
  EXPECT_EQ(metrics.kv_blocks_total - metrics.kv_blocks_free, (prompt_blocks + 3) * heads);
  RunUntilIdle(*scheduler);

  Outcome outcome;
  Drain(*handle, outcome);
  ASSERT_TRUE(outcome.ended);
  ASSERT_EQ(outcome.tokens.size(), 4u);
  request.n = 1;
  const Outcome single = RunOneAtATime(*this, *scheduler, {request})[0];
  for (const auto& tokens : outcome.tokens) EXPECT_EQ(tokens, single.tokens[0]);
  EXPECT_EQ(outcome.usage.prompt_tokens, 100);
  EXPECT_EQ(outcome.usage.completion_tokens, 32);
  metrics = scheduler->Metrics();
  EXPECT_EQ(metrics.kv_blocks_free, metrics.kv_blocks_total);
}

TEST_F(SchedulerTest, SeededCompletionsDifferAndRepeat) {
  std::mt19937 random(9);
  Request request = Greedy(RandomPrompt(random, 20), 24);
  request.sampling.temperature = 1.5f;
  request.sampling.seed = 42;
  request.n = 2;
  auto scheduler = NewScheduler(SmallConfig());
  const Outcome first = RunOneAtATime(*this, *scheduler, {request})[0];
  const Outcome again = RunOneAtATime(*this, *scheduler, {request})[0];
  ASSERT_EQ(first.tokens.size(), 2u);
  EXPECT_NE(first.tokens[0], first.tokens[1]);
  EXPECT_EQ(first.tokens, again.tokens);
}

// The document question from docs/examples: the model answers and ends with <|eot_id|>.
Request DocumentQuestion(const text::Tokenizer& tokenizer) {
  std::ifstream in(kvd::test_support::SourceDir() + "/docs/examples/document_question.txt");
  std::stringstream text;
  text << in.rdbuf();
  Request request;
  request.prompt = tokenizer.Encode(text.str(), /*add_special=*/true);
  request.sampling.temperature = 0.0f;
  request.max_tokens = 32;
  return request;
}

TEST_F(SchedulerTest, EndOfSequenceFinishesWithoutItsText) {
  auto scheduler = NewScheduler(SmallConfig());
  const Outcome outcome = RunOneAtATime(*this, *scheduler, {DocumentQuestion(*tokenizer_)})[0];
  EXPECT_EQ(outcome.text[0], "KSOHB");
  EXPECT_EQ(outcome.finish[0], FinishReason::kStop);
  EXPECT_EQ(outcome.tokens[0].back(), *tokenizer_->TokenToId("<|eot_id|>"));
}

TEST_F(SchedulerTest, MinTokensHoldsBackEndOfSequence) {
  auto scheduler = NewScheduler(SmallConfig());
  Request request = DocumentQuestion(*tokenizer_);
  request.min_tokens = 12;
  const Outcome outcome = RunOneAtATime(*this, *scheduler, {request})[0];
  ASSERT_GE(outcome.tokens[0].size(), 12u);
  const auto& eos = model_->config().eos_token_ids;
  for (size_t i = 0; i + 1 < 12; ++i) {
    EXPECT_EQ(std::count(eos.begin(), eos.end(), outcome.tokens[0][i]), 0) << i;
  }
}

TEST_F(SchedulerTest, StopTokenIdsAndMaxTokens) {
  auto scheduler = NewScheduler(SmallConfig());
  std::mt19937 random(21);
  Request request = Greedy(RandomPrompt(random, 50), 30);
  const Outcome full = RunOneAtATime(*this, *scheduler, {request})[0];
  ASSERT_EQ(full.tokens[0].size(), 30u);
  EXPECT_EQ(full.finish[0], FinishReason::kLength);
  // Stop on the first token that has not occurred before position 4.
  const auto& tokens = full.tokens[0];
  size_t at = 4;
  while (std::find(tokens.begin(), tokens.begin() + at, tokens[at]) != tokens.begin() + at) ++at;
  request.stop_token_ids = {tokens[at]};
  const Outcome stopped = RunOneAtATime(*this, *scheduler, {request})[0];
  EXPECT_EQ(stopped.tokens[0], std::vector<int32_t>(tokens.begin(), tokens.begin() + at + 1));
  EXPECT_EQ(stopped.finish[0], FinishReason::kStop);
  EXPECT_EQ(stopped.text[0],
            *tokenizer_->Decode(std::vector<int32_t>(tokens.begin(), tokens.begin() + at)));
}

TEST_F(SchedulerTest, StopStringsAreCutAndNeverPartlyEmitted) {
  auto scheduler = NewScheduler(SmallConfig());
  std::mt19937 random(4);
  Request request = Greedy(RandomPrompt(random, 40), 40);
  const Outcome full = RunOneAtATime(*this, *scheduler, {request})[0];
  const std::string text = full.text[0];
  ASSERT_GE(text.size(), 12u);
  const std::string stop = text.substr(6, 4);
  const size_t expected_end = text.find(stop);
  request.stop = {"never-in-the-output", stop};
  auto handle = scheduler->Submit(request);
  ASSERT_TRUE(handle.ok());
  std::string streamed;
  while (scheduler->HasWork()) {
    ASSERT_TRUE(scheduler->Step().ok());
    while (auto event = handle->Next(absl::ZeroDuration())) {
      streamed += event->text;
      // Whatever has been released so far is a prefix of the final text, never a stop's start.
      EXPECT_EQ(text.substr(0, streamed.size()), streamed);
      EXPECT_LE(streamed.size(), expected_end);
      if (event->finish_reason) {
        EXPECT_EQ(*event->finish_reason, FinishReason::kStop);
        EXPECT_EQ(event->stop_string, stop);
      }
    }
  }
  EXPECT_EQ(streamed, text.substr(0, expected_end));
}

TEST_F(SchedulerTest, InvalidRequestsAreRefusedAtSubmit) {
  SchedulerConfig config = SmallConfig();
  config.kv_cache_bytes = KvBytesForTokens(256);
  auto scheduler = NewScheduler(config);
  EXPECT_EQ(scheduler->max_sequence_tokens(), 256);
  std::mt19937 random(1);
  auto code = [&](Request request) {
    return scheduler->Submit(std::move(request)).status().code();
  };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(code(Greedy({}, 4)), kInvalid);
  EXPECT_EQ(code(Greedy({1, 2, 100000}, 4)), kInvalid);
  EXPECT_EQ(code(Greedy({1, -1}, 4)), kInvalid);
  EXPECT_EQ(code(Greedy(RandomPrompt(random, 10), 0)), kInvalid);
  EXPECT_EQ(code(Greedy(RandomPrompt(random, 10), 2048)), kInvalid);  // beyond the context
  EXPECT_EQ(code(Greedy(RandomPrompt(random, 300), 4)), kInvalid);    // beyond the KV cache
  // With its output: a sequence the cache could only cut short.
  EXPECT_EQ(code(Greedy(RandomPrompt(random, 200), 57)), kInvalid);
  EXPECT_TRUE(scheduler->Submit(Greedy(RandomPrompt(random, 200), 56)).ok());
  Request request = Greedy(RandomPrompt(random, 10), 4);
  request.n = 0;
  EXPECT_EQ(code(request), kInvalid);
  request.n = 1;
  request.min_tokens = 5;
  EXPECT_EQ(code(request), kInvalid);
  request.min_tokens = 0;
  request.stop = {""};
  EXPECT_EQ(code(request), kInvalid);
  request.stop = {};
  request.stop_token_ids = {5000};
  EXPECT_EQ(code(request), kInvalid);
  request.stop_token_ids = {};
  request.sampling.top_p = 0.0f;
  EXPECT_EQ(code(request), kInvalid);
  request.sampling.top_p = 1.0f;
  request.tenant.weight = 0.0;
  EXPECT_EQ(code(request), kInvalid);
  request.tenant.weight = 1.0;
  EXPECT_TRUE(scheduler->Submit(request).ok());
  EXPECT_EQ(scheduler->Metrics().num_waiting, 0);  // nothing stepped yet; nothing leaked either
  RunUntilIdle(*scheduler);
}

TEST_F(SchedulerTest, QueueLimitsRefuseWithDistinctCodes) {
  SchedulerConfig config = SmallConfig();
  config.max_queued_requests = 5;
  auto scheduler = NewScheduler(config);
  std::mt19937 random(2);
  Request request = Greedy(RandomPrompt(random, 10), 2);
  request.tenant = {.id = "a", .max_queued_requests = 2};
  std::vector<RequestHandle> handles;
  handles.push_back(*scheduler->Submit(request));
  handles.push_back(*scheduler->Submit(request));
  EXPECT_EQ(scheduler->Submit(request).status().code(), absl::StatusCode::kResourceExhausted);
  request.tenant = {.id = "b"};
  for (int i = 0; i < 3; ++i) handles.push_back(*scheduler->Submit(request));
  EXPECT_EQ(scheduler->Submit(request).status().code(), absl::StatusCode::kUnavailable);
  // Admission frees the queue.
  ASSERT_TRUE(scheduler->Step().ok());
  request.tenant = {.id = "a", .max_queued_requests = 2};
  EXPECT_TRUE(scheduler->Submit(request).ok());
  scheduler->Stop();
  EXPECT_EQ(scheduler->Submit(request).status().code(), absl::StatusCode::kUnavailable);
  for (RequestHandle& handle : handles) {
    Outcome outcome;
    Drain(handle, outcome);
    EXPECT_TRUE(outcome.ended);
  }
}

TEST_F(SchedulerTest, SchedulerThreadServesConcurrentClients) {
  const std::vector<Request> requests = MixedGreedyRequests(24, 13);
  auto alone = NewScheduler(SmallConfig());
  const std::vector<Outcome> expected = RunOneAtATime(*this, *alone, requests);

  auto scheduler = NewScheduler(SmallConfig());
  scheduler->Start();
  std::vector<Outcome> outcomes(requests.size());
  std::vector<std::thread> clients;
  for (int client = 0; client < 4; ++client) {
    clients.emplace_back([&, client] {
      for (size_t i = client; i < requests.size(); i += 4) {
        auto handle = scheduler->Submit(requests[i]);
        ASSERT_TRUE(handle.ok());
        while (!outcomes[i].ended) {
          auto event = handle->Next();
          ASSERT_TRUE(event.has_value());
          if (event->final) {
            outcomes[i].ended = true;
            outcomes[i].usage = event->usage;
            continue;
          }
          outcomes[i].tokens.resize(1);
          outcomes[i].text.resize(1);
          outcomes[i].finish.resize(1);
          outcomes[i].tokens[0].insert(outcomes[i].tokens[0].end(), event->token_ids.begin(),
                                       event->token_ids.end());
          outcomes[i].text[0] += event->text;
          outcomes[i].finish[0] = event->finish_reason;
        }
      }
    });
  }
  for (auto& client : clients) client.join();
  scheduler->Stop();
  ExpectSameOutputs(outcomes, expected);
}

TEST_F(SchedulerTest, StopEndsUnfinishedRequests) {
  auto scheduler = NewScheduler(SmallConfig());
  std::mt19937 random(8);
  auto handle = scheduler->Submit(Greedy(RandomPrompt(random, 30), 100));
  ASSERT_TRUE(handle.ok());
  ASSERT_TRUE(scheduler->Step().ok());
  scheduler->Stop();
  Outcome outcome;
  Drain(*handle, outcome);
  EXPECT_TRUE(outcome.ended);
  EXPECT_EQ(outcome.status.code(), absl::StatusCode::kUnavailable);
  const MetricsSnapshot metrics = scheduler->Metrics();
  EXPECT_EQ(metrics.kv_blocks_free, metrics.kv_blocks_total);
}

}  // namespace
}  // namespace kvd::scheduler::testing
