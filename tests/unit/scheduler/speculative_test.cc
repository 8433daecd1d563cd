// Speculative decoding in the scheduler: with n-gram drafts, every request's output is token for
// token what one token per step gives (greedy or seeded sampling, n > 1, penalties, stop
// strings, logprobs, constraints, a cached prefix, a cache too small for every draft), while
// drafts are both kept and refused along the way.
#include <gtest/gtest.h>

#include <random>

#include "tests/unit/scheduler/speculative_fixture.h"

namespace kvd::scheduler::testing {
namespace {

TEST_F(SpeculativeTest, GreedyOutputsAreUnchangedAloneAndInABatch) {
  std::mt19937 random(5);
  std::vector<Request> requests;
  for (int32_t i = 0; i < 6; ++i) requests.push_back(QuestionAboutADocument(random, 12));
  ExpectSameOutputs(SmallConfig(), {requests.front()});
  ExpectSameOutputs(SmallConfig(), requests);
}

TEST_F(SpeculativeTest, SeededSamplingIsUnchangedWithPenaltiesLogprobsAndSeveralChoices) {
  std::mt19937 random(6);
  std::vector<Request> requests;
  for (int32_t i = 0; i < 4; ++i) {
    Request request = Greedy(RepeatingPrompt(random, 10), 48);
    request.sampling = {.temperature = 0.7f,
                        .top_p = 0.95f,
                        .repetition_penalty = i % 2 == 0 ? 1.0f : 1.1f,
                        .seed = 40 + static_cast<uint64_t>(i),
                        .logprobs = true,
                        .top_logprobs = 2};
    request.n = i == 0 ? 3 : 1;
    requests.push_back(std::move(request));
  }
  ExpectSameOutputs(SmallConfig(), requests);
}

TEST_F(SpeculativeTest, StopsAndLimitsEndTheOutputWhereTheyWouldWithoutDrafts) {
  std::mt19937 random(7);
  std::vector<Request> requests;
  for (int32_t i = 0; i < 6; ++i) {
    Request request = Greedy(RepeatingPrompt(random, 12), 3 + 5 * i);
    request.ignore_eos = false;
    request.min_tokens = i % 3;
    requests.push_back(std::move(request));
  }
  // Stop strings taken from the plain run's own outputs, so they are met mid-draft.
  const Results plain = RunAll(SmallConfig(), requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::string& text = plain.outcomes[i].text[0];
    if (text.size() >= 6) requests[i].stop = {text.substr(text.size() / 2, 2)};
  }
  ExpectSameOutputs(SmallConfig(), requests);
}

TEST_F(SpeculativeTest, CachedPrefixesAndACacheTooSmallForEveryDraftChangeNothing) {
  std::mt19937 random(5);
  std::vector<Request> requests;
  for (int32_t i = 0; i < 6; ++i) requests.push_back(QuestionAboutADocument(random, 12));
  // The later two share the first one's prefix through the cache.
  ExpectSameOutputs(SmallConfig(), {requests[0], requests[0], requests[0]}, /*draft_tokens=*/8);
  // Short questions beside longer outputs, and room for about 2.5 of the longest sequences:
  // drafts give way, then sequences are preempted.
  std::vector<Request> crowded_requests;
  for (int32_t i = 0; i < 8; ++i) {
    crowded_requests.push_back(i % 4 == 0 ? QuestionAboutADocument(random, 12, 120)
                                          : Greedy(RepeatingPrompt(random, 12), 60));
  }
  int32_t longest = 0;
  for (const Request& request : crowded_requests) {
    longest = std::max(longest, static_cast<int32_t>(request.prompt.size()) + request.max_tokens);
  }
  SchedulerConfig small = SmallConfig();
  small.kv_cache_bytes = KvBytesForTokens(longest * 5 / 2);
  const Results crowded = ExpectSameOutputs(small, crowded_requests, /*draft_tokens=*/8);
  EXPECT_GT(crowded.metrics.preemptions, 0u) << "the cache never ran short";
}

// A conversation's next turn finds the first turn's answer in the prefix cache as it does
// without drafts: the blocks verified tokens fill are published, the last step's included.
TEST_F(SpeculativeTest, TheNextTurnFindsTheAnswerInThePrefixCache) {
  std::mt19937 random(12);
  std::vector<Request> firsts;
  for (int32_t i = 0; i < 12; ++i)
    firsts.push_back(QuestionAboutADocument(random, 40, 300 + 40 * i));
  std::vector<uint64_t> hits;
  for (const SchedulerConfig& config : {SmallConfig(), Speculating(SmallConfig())}) {
    auto scheduler = NewScheduler(config);
    hits.push_back(0);
    for (const Request& first : firsts) {
      RequestHandle handle = scheduler->Submit(first).value();
      RunUntilIdle(*scheduler);
      Outcome answer;
      Drain(handle, answer);
      ASSERT_TRUE(answer.ended && answer.status.ok());
      Request next = first;
      next.prompt.insert(next.prompt.end(), answer.tokens[0].begin(), answer.tokens[0].end());
      next.prompt.push_back(tokenizer_->TokenToId("<|eot_id|>").value());
      const uint64_t before = scheduler->Metrics().prefix_cache_hits;
      RequestHandle second = scheduler->Submit(next).value();
      RunUntilIdle(*scheduler);
      hits.back() += scheduler->Metrics().prefix_cache_hits - before;
    }
  }
  EXPECT_GT(hits[0], 0u);
  EXPECT_EQ(hits[1], hits[0]);
}

// A request may draft fewer tokens than the server would, or none; the server's bound holds.
TEST_F(SpeculativeTest, ARequestDraftsAtMostItsOwnCountAndTheServers) {
  std::mt19937 random(5);
  std::vector<Request> requests;
  for (int32_t i = 0; i < 6; ++i) requests.push_back(QuestionAboutADocument(random, 12));
  const auto drafted = [&](std::optional<int32_t> per_request, int32_t server) {
    std::vector<Request> asked = requests;
    for (Request& request : asked) request.num_speculative_tokens = per_request;
    const Results run = RunAll(Speculating(SmallConfig(), server), asked);
    EXPECT_LE(run.metrics.spec_decode_accepted_per_position.size(),
              static_cast<size_t>(std::min(per_request.value_or(server), server)));
    return run.metrics.spec_decode_draft_tokens;
  };
  EXPECT_EQ(drafted(0, 4), 0u);
  EXPECT_GT(drafted(1, 4), 0u);
  EXPECT_GT(drafted(std::nullopt, 4), drafted(1, 4));
  EXPECT_EQ(drafted(8, 2), drafted(std::nullopt, 2));
  auto scheduler = NewScheduler(SmallConfig());
  Request refused = requests.front();
  refused.num_speculative_tokens = -1;
  EXPECT_EQ(scheduler->Submit(refused).status().code(), absl::StatusCode::kInvalidArgument);
}

// KeepKV sequences take no drafts (KeepKV edits their heads after every step); beside
// sequences that do, in one batch, every output is unchanged.
TEST_F(SpeculativeTest, KeepKvSequencesBesideDraftingOnesAreUnchanged) {
  std::mt19937 random(13);
  std::vector<Request> requests;
  for (int32_t i = 0; i < 6; ++i) {
    requests.push_back(QuestionAboutADocument(random, 24));
    requests.back().ignore_eos = true;
    if (i % 2 == 0) {
      cache_store::KeepKvParams params;
      params.budget.tokens = 64;
      requests.back().keepkv = params;
    }
  }
  // The KeepKV sequences take as many steps as without drafts, and the batch with them.
  ExpectSameOutputs(SmallConfig(), requests, /*draft_tokens=*/4, /*fewer_steps=*/false);
}

// Drafts take only what leaves every later running sequence its token of the step: with a
// budget of one token per running sequence nothing is drafted, and with a little more no
// sequence waits a step for another's drafts.
TEST_F(SpeculativeTest, DraftsNeverTakeALaterSequencesToken) {
  std::vector<Request> requests;
  // One-token prompts: all six are admitted in the first step and end together. (Drafts come
  // before prompt chunks of waiting requests, as in vLLM: staggered admissions would let a
  // sequence draft while another waits.)
  for (int32_t i = 0; i < 6; ++i) requests.push_back(Greedy({'a' + i}, 40));
  SchedulerConfig tight = SmallConfig();
  tight.max_num_seqs = 6;
  tight.max_num_batched_tokens = 12;
  const Results plain = RunAll(tight, requests);
  SchedulerConfig squeezed = Speculating(tight);
  squeezed.max_num_batched_tokens = 6;
  const Results without_room = RunAll(squeezed, requests);
  EXPECT_EQ(without_room.metrics.spec_decode_draft_tokens, 0u);
  const Results with_room = RunAll(Speculating(tight), requests);  // 6 draft tokens a step
  EXPECT_GT(with_room.metrics.spec_decode_accepted_tokens, 0u);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(without_room.outcomes[i].tokens, plain.outcomes[i].tokens);
    EXPECT_EQ(with_room.outcomes[i].tokens, plain.outcomes[i].tokens);
  }
  EXPECT_EQ(without_room.metrics.steps, plain.metrics.steps);
  EXPECT_LT(with_room.metrics.steps, plain.metrics.steps);
}

// A batch of more sequences than disable_by_batch_size drafts nothing.
TEST_F(SpeculativeTest, ALargeEnoughBatchDraftsNothing) {
  std::mt19937 random(8);
  std::vector<Request> requests;
  for (int32_t i = 0; i < 6; ++i) requests.push_back(Greedy(RepeatingPrompt(random, 12), 24));
  const auto drafted = [&](int32_t disable_by_batch_size) {
    SchedulerConfig config = Speculating(SmallConfig());
    config.speculative.disable_by_batch_size = disable_by_batch_size;
    return RunAll(config, requests).metrics.spec_decode_draft_tokens;
  };
  EXPECT_EQ(drafted(5), 0u);  // the six run together from start to end
  EXPECT_GT(drafted(6), 0u);
  EXPECT_EQ(drafted(6), drafted(0));
}

TEST_F(SpeculativeTest, ConstrainedOutputsAreUnchanged) {
  const auto constraint = SmallObjectConstraint();
  std::mt19937 random(9);
  std::vector<Request> requests;
  for (int32_t i = 0; i < 4; ++i) {
    Request request = Greedy(RepeatingPrompt(random, 8), 80);
    request.ignore_eos = false;
    request.sampling = {.temperature = i == 0 ? 0.0f : 1.0f, .seed = 70 + static_cast<uint64_t>(i)};
    request.constraint = constraint;
    requests.push_back(std::move(request));
  }
  ExpectSameOutputs(SmallConfig(), requests);
}

}  // namespace
}  // namespace kvd::scheduler::testing
