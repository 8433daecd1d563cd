// Speculative decoding with a draft model (the bundled model's first two layers drafting for all
// four): greedy output is token for token what one token per step gives, through batches, stop
// strings, several choices, logprobs, constraints, cached prefixes and a crowded cache; sampled
// output follows the served model's distribution (a chi-square test over many seeds) and is
// reproducible under a seed.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "engine/kv_cache.h"
#include "tests/unit/scheduler/speculative_fixture.h"

namespace kvd::scheduler::testing {
namespace {

class DraftModelTest : public SpeculativeTest {
 protected:
  DraftModelTest() { method_ = SpeculativeMethod::kDraftModel; }

  // Questions about a document in the prompt, answered on past the answer: drafts both kept and
  // refused.
  static std::vector<Request> Questions(std::mt19937& random, int32_t count, int32_t max_tokens) {
    std::vector<Request> requests;
    for (int32_t i = 0; i < count; ++i) {
      requests.push_back(QuestionAboutADocument(random, max_tokens));
      requests.back().ignore_eos = true;
    }
    return requests;
  }
};

TEST_F(DraftModelTest, GreedyOutputsAreUnchangedAloneAndInABatch) {
  std::mt19937 random(5);
  const std::vector<Request> requests = Questions(random, 6, 24);
  ExpectSameOutputs(SmallConfig(), {requests.front()});
  ExpectSameOutputs(SmallConfig(), requests);
}

TEST_F(DraftModelTest, StopsLimitsChoicesAndLogprobsAreUnchanged) {
  std::mt19937 random(7);
  std::vector<Request> requests = Questions(random, 6, 0);
  for (int32_t i = 0; i < 6; ++i) {
    Request& request = requests[i];
    request.max_tokens = 3 + 5 * i;
    request.min_tokens = i % 3;
    request.n = i == 1 ? 2 : 1;
    request.sampling.logprobs = i % 2 == 0;
    request.sampling.top_logprobs = i == 2 ? 2 : 0;
  }
  const Results plain = RunAll(SmallConfig(), requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::string& text = plain.outcomes[i].text[0];
    if (text.size() >= 6) requests[i].stop = {text.substr(text.size() / 2, 2)};
  }
  ExpectSameOutputs(SmallConfig(), requests);
}

TEST_F(DraftModelTest, CachedPrefixesAndACrowdedCacheChangeNothingAndLeakNothing) {
  std::mt19937 random(5);
  const Request question = Questions(random, 1, 24).front();
  ExpectSameOutputs(SmallConfig(), {question, question, question}, /*draft_tokens=*/8);
  std::vector<Request> crowded_requests = Questions(random, 8, 60);
  int32_t longest = 0;
  for (const Request& request : crowded_requests) {
    longest = std::max(longest, static_cast<int32_t>(request.prompt.size()) + request.max_tokens);
  }
  // Room for about 2.5 of the longest sequences: draft caches give way, then sequences do (and
  // draft caches rarely find room, so steps are not fewer).
  SchedulerConfig small = SmallConfig();
  small.kv_cache_bytes = KvBytesForTokens(longest * 5 / 2);
  const Results crowded =
      ExpectSameOutputs(small, crowded_requests, /*draft_tokens=*/8, /*fewer_steps=*/false);
  EXPECT_GT(crowded.metrics.preemptions, 0u) << "the cache never ran short";
}

// KeepKV sequences take no drafts; beside sequences that do, every output is unchanged.
TEST_F(DraftModelTest, KeepKvSequencesBesideDraftingOnesAreUnchanged) {
  std::mt19937 random(13);
  std::vector<Request> requests = Questions(random, 6, 24);
  for (size_t i = 0; i < requests.size(); i += 2) {
    cache_store::KeepKvParams params;
    params.budget.tokens = 64;
    requests[i].keepkv = params;
  }
  ExpectSameOutputs(SmallConfig(), requests, /*draft_tokens=*/4, /*fewer_steps=*/false);
}

TEST_F(DraftModelTest, GreedyConstrainedOutputsAreUnchanged) {
  const auto constraint = SmallObjectConstraint();
  std::mt19937 random(9);
  std::vector<Request> requests = Questions(random, 4, 80);
  for (Request& request : requests) {
    request.ignore_eos = false;
    request.constraint = constraint;
  }
  // The draft model knows no constraint: most of its drafts are refused, and few steps saved.
  ExpectSameOutputs(SmallConfig(), requests, /*draft_tokens=*/4, /*fewer_steps=*/false);
}

TEST_F(DraftModelTest, SeededSamplingIsReproducible) {
  std::mt19937 random(6);
  std::vector<Request> requests = Questions(random, 4, 40);
  for (int32_t i = 0; i < 4; ++i) {
    Request& request = requests[i];
    request.sampling = {.temperature = 0.8f,
                        .top_p = 0.95f,
                        .repetition_penalty = i % 2 == 0 ? 1.0f : 1.1f,
                        .seed = 40 + static_cast<uint64_t>(i),
                        .logprobs = true};
    request.n = i == 0 ? 3 : 1;
  }
  const Results first = RunAll(Speculating(SmallConfig()), requests);
  const Results second = RunAll(Speculating(SmallConfig()), requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    ASSERT_TRUE(first.outcomes[i].ended && first.outcomes[i].status.ok());
    EXPECT_EQ(first.outcomes[i].tokens, second.outcomes[i].tokens) << "request " << i;
    EXPECT_EQ(first.outcomes[i].logprobs, second.outcomes[i].logprobs) << "request " << i;
  }
  EXPECT_GT(first.metrics.spec_decode_accepted_tokens, 0u);
  EXPECT_GT(first.metrics.spec_decode_draft_tokens, first.metrics.spec_decode_accepted_tokens);
}

// The upper 1e-6 tail of the chi-square distribution with `dof` degrees of freedom, by the
// Wilson-Hilferty cube (z = 4.753): within 5% of the exact quantile from 5 degrees on, above it.
double ChiSquareBound(int32_t dof) {
  const double k = dof;
  const double cube = 1.0 - 2.0 / (9.0 * k) + 4.753 * std::sqrt(2.0 / (9.0 * k));
  return k * cube * cube * cube;
}

// The served model's distribution of its first three sampled tokens after `prompt`, computed
// position by position with the sampler's own processing: (t1, t2, t3) -> probability.
std::map<std::vector<int32_t>, double> ExactTriples(engine::Model& model,
                                                    const std::vector<int32_t>& prompt,
                                                    const engine::SamplingParams& params) {
  const engine::ModelConfig& config = model.config();
  auto pool =
      engine::KvBlockPool::Create(
          model.backend(), {.num_blocks = 4096, .block_size = 16, .head_dim = config.head_dim})
          .value();
  engine::Sampler sampler(params, 0);
  auto next = [&](const std::vector<int32_t>& context) {
    engine::SequenceKv kv(config.num_layers, config.num_kv_heads);
    EXPECT_TRUE(kv.Reserve(*pool, static_cast<int32_t>(context.size())).ok());
    engine::StepLogits logits;
    const engine::SequenceStep step{.kv = &kv, .tokens = context};
    EXPECT_TRUE(model.Forward({&step, 1}, *pool, logits).ok());
    std::vector<float> probabilities =
        sampler.Probabilities(logits.row(0), context, context.size() - prompt.size());
    kv.Release(*pool);
    return probabilities;
  };
  std::map<std::vector<int32_t>, double> triples;
  const std::vector<float> first = next(prompt);
  for (int32_t t1 = 0; t1 < config.vocab_size; ++t1) {
    if (first[t1] == 0.0f) continue;
    std::vector<int32_t> context = prompt;
    context.push_back(t1);
    const std::vector<float> second = next(context);
    for (int32_t t2 = 0; t2 < config.vocab_size; ++t2) {
      if (second[t2] == 0.0f) continue;
      context.push_back(t2);
      const std::vector<float> third = next(context);
      for (int32_t t3 = 0; t3 < config.vocab_size; ++t3) {
        if (third[t3] > 0.0f) triples[{t1, t2, t3}] = double{first[t1]} * second[t2] * third[t3];
      }
      context.pop_back();
    }
  }
  return triples;
}

// Many seeds, three sampled tokens each: the second and third come out of verified drafts (kept
// or replaced), and their joint frequencies with the first must fit the served model's
// distribution, whatever the draft model's.
TEST_F(DraftModelTest, SampledTokensFollowTheServedModelsDistribution) {
  std::mt19937 random(21);
  const std::vector<int32_t> prompt = RandomPrompt(random, 8);
  const engine::SamplingParams params = {.temperature = 1.0f, .top_k = 3};
  const std::map<std::vector<int32_t>, double> exact = ExactTriples(*model_, prompt, params);
  ASSERT_GE(exact.size(), 8u);

  constexpr int32_t kSeeds = 3000;
  std::vector<Request> requests;
  for (int32_t seed = 0; seed < kSeeds; ++seed) {
    Request request = Greedy(prompt, 3);
    request.sampling = params;
    request.sampling.seed = static_cast<uint64_t>(seed);
    requests.push_back(std::move(request));
  }
  SchedulerConfig config = Speculating(SmallConfig(), /*tokens=*/2);
  config.max_num_seqs = 256;
  config.max_num_batched_tokens = 4096;
  const Results run = RunAll(config, requests);
  std::map<std::vector<int32_t>, int64_t> counts;
  for (const Outcome& outcome : run.outcomes) {
    ASSERT_TRUE(outcome.ended && outcome.status.ok()) << outcome.status;
    ASSERT_EQ(outcome.tokens[0].size(), 3u);
    ++counts[outcome.tokens[0]];
  }
  // Cells expected fewer than 5 times are pooled into one, as the chi-square test requires.
  double statistic = 0.0, pooled_expected = 0.0;
  int64_t pooled_count = 0;
  int32_t cells = 0;
  for (const auto& [triple, probability] : exact) {
    const double expected = probability * kSeeds;
    const int64_t count = counts.contains(triple) ? counts.at(triple) : 0;
    counts.erase(triple);
    if (expected < 5.0) {
      pooled_expected += expected;
      pooled_count += count;
      continue;
    }
    statistic += (count - expected) * (count - expected) / expected;
    ++cells;
  }
  if (pooled_expected > 0.0) {
    statistic += (pooled_count - pooled_expected) * (pooled_count - pooled_expected) /
                 std::max(pooled_expected, 5.0);
    ++cells;
  }
  EXPECT_TRUE(counts.empty()) << "sampled a sequence the served model never samples";
  EXPECT_LT(statistic, ChiSquareBound(cells - 1)) << cells << " cells";
  // Both halves of the rule ran: drafts kept and drafts replaced.
  EXPECT_GT(run.metrics.spec_decode_accepted_tokens, 0u);
  EXPECT_GT(run.metrics.spec_decode_draft_tokens, run.metrics.spec_decode_accepted_tokens);
}

// A draft model in a dtype of its own (int8 beside the served model's f32) drafts as well, and
// greedy outputs stay unchanged.
TEST_F(DraftModelTest, ADraftModelInItsOwnDtypeLeavesOutputsUnchanged) {
  std::mt19937 random(15);
  SchedulerConfig config = SmallConfig();
  const std::vector<Request> requests = Questions(random, 4, 24);
  method_ = SpeculativeMethod::kDraftModel;
  const Results plain = RunAll(config, requests);
  SchedulerConfig int8 = Speculating(config);
  int8.speculative.dtype = "int8";
  const Results drafted = RunAll(int8, requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(drafted.outcomes[i].tokens, plain.outcomes[i].tokens) << "request " << i;
  }
  EXPECT_GT(drafted.metrics.spec_decode_accepted_tokens, 0u);
}

TEST_F(DraftModelTest, AMissingOrMisplacedDraftModelIsRefused) {
  SchedulerConfig config = Speculating(SmallConfig());
  config.speculative.model = (std::filesystem::path(::testing::TempDir()) / "missing").string();
  EXPECT_EQ(Scheduler::Create(*model_, tokenizer_, config).status().code(),
            absl::StatusCode::kInvalidArgument);
  config.speculative.model.clear();
  EXPECT_EQ(config.Validate().code(), absl::StatusCode::kInvalidArgument);
  SchedulerConfig ngram = SmallConfig();
  ngram.speculative = {.method = SpeculativeMethod::kNgram, .model = TinyDraftModelDir()};
  EXPECT_EQ(ngram.Validate().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvd::scheduler::testing
