// Automatic prefix caching through the scheduler: what a later request computes (counted in
// tokens), that its output is the uncached run's, tenant isolation, and eviction under pool
// pressure.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "scheduler/scheduler.h"
#include "tests/unit/scheduler/scheduler_fixture.h"

namespace kvd::scheduler::testing {
namespace {

struct PrefixRun {
  Outcome outcome;
  int64_t prefill_tokens = 0;  // prompt tokens computed while the request ran
};

// Runs `request` alone to its end on `scheduler`.
PrefixRun RunAlone(Scheduler& scheduler, const Request& request) {
  PrefixRun run;
  auto handle = scheduler.Submit(request);
  EXPECT_TRUE(handle.ok()) << handle.status();
  while (scheduler.HasWork()) {
    auto report = scheduler.Step();
    EXPECT_TRUE(report.ok()) << report.status();
    run.prefill_tokens += report->num_prefill_tokens;
  }
  Drain(*handle, run.outcome);
  EXPECT_TRUE(run.outcome.ended);
  EXPECT_TRUE(run.outcome.status.ok()) << run.outcome.status;
  return run;
}

std::vector<int32_t> Concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Follows the scheduler's KV events from batch `seen` on, into `blocks` (hash -> tokens).
void FollowKvEvents(const KvEventLog& log, uint64_t& seen,
                    std::map<std::string, std::vector<int32_t>>& blocks) {
  for (const KvEventBatch& batch : log.Since(seen)) {
    EXPECT_EQ(batch.sequence, seen + 1) << "a follower that keeps up sees every batch";
    seen = batch.sequence;
    for (const KvEvent& event : batch.events) {
      for (const std::string& hash : event.block_hashes) {
        if (event.kind == KvEvent::Kind::kBlockStored) {
          EXPECT_TRUE(blocks.emplace(hash, event.token_ids).second) << "stored twice";
        } else {
          EXPECT_EQ(blocks.erase(hash), 1u) << "removed without being stored";
        }
      }
    }
  }
}

std::vector<int32_t> Letters(std::mt19937& random, int32_t length) {
  std::uniform_int_distribution<int32_t> letter('a', 'z');
  std::vector<int32_t> tokens;
  for (int32_t i = 0; i < length; ++i) tokens.push_back(letter(random));
  return tokens;
}

class PrefixCacheTest : public SchedulerTest {
 protected:
  static SchedulerConfig Config(bool enabled) {
    SchedulerConfig config = SmallConfig();
    config.prefix_cache.enabled = enabled;
    return config;
  }
  static Request Seeded(std::vector<int32_t> prompt, int32_t max_tokens, uint64_t seed) {
    Request request = Greedy(std::move(prompt), max_tokens);
    request.sampling.temperature = 1.0f;
    request.sampling.seed = seed;
    return request;
  }
  static Request OfTenant(Request request, const std::string& tenant,
                          const std::string& salt = "") {
    request.tenant.id = tenant;
    request.tenant.prefix_cache_salt = salt;
    return request;
  }
};

TEST_F(PrefixCacheTest, ASecondRequestComputesOnlyWhatFollowsTheSharedPrefix) {
  std::mt19937 random(11);
  const std::vector<int32_t> prefix = RandomPrompt(random, 1000);
  const std::vector<int32_t> first = Concat(prefix, Letters(random, 40));
  const std::vector<int32_t> second = Concat(prefix, Letters(random, 57));
  // 62 whole blocks of 16 lie inside the 1,000 shared tokens; the 63rd holds suffix tokens.
  constexpr int32_t kShared = 62 * 16;

  for (const bool seeded : {false, true}) {
    SCOPED_TRACE(seeded ? "seeded sampling" : "greedy");
    auto make = [&](const std::vector<int32_t>& prompt) {
      return seeded ? Seeded(prompt, 24, 5) : Greedy(prompt, 24);
    };
    auto uncached = NewScheduler(Config(false));
    const PrefixRun reference = RunAlone(*uncached, make(second));
    EXPECT_EQ(reference.prefill_tokens, std::ssize(second));
    EXPECT_EQ(reference.outcome.usage.cached_tokens, 0);

    auto cached = NewScheduler(Config(true));
    const PrefixRun warm = RunAlone(*cached, make(first));
    EXPECT_EQ(warm.prefill_tokens, std::ssize(first));
    EXPECT_EQ(warm.outcome.usage.cached_tokens, 0);
    const PrefixRun run = RunAlone(*cached, make(second));
    EXPECT_EQ(run.prefill_tokens, std::ssize(second) - kShared);
    EXPECT_EQ(run.outcome.usage.cached_tokens, kShared);
    EXPECT_EQ(run.outcome.usage.prompt_tokens, std::ssize(second));
    EXPECT_EQ(run.outcome.tokens, reference.outcome.tokens);
    EXPECT_EQ(run.outcome.text, reference.outcome.text);

    const MetricsSnapshot metrics = cached->Metrics();
    EXPECT_EQ(metrics.prefix_cache_queries, first.size() + second.size());
    EXPECT_EQ(metrics.prefix_cache_hits, uint64_t{kShared});
    EXPECT_EQ(metrics.tenants.at("default").prefix_cache_hits, uint64_t{kShared});
    EXPECT_GT(metrics.prefix_cache_blocks, 0);
  }
}

TEST_F(PrefixCacheTest, ARepeatedPromptComputesOnlyItsLastToken) {
  std::mt19937 random(12);
  // 160 tokens: whole blocks, the last of which is shared with one entry fewer (blocks of 16)
  // or left out (blocks of 1).
  const std::vector<int32_t> prompt = RandomPrompt(random, 160);
  auto uncached = NewScheduler(Config(false));
  const PrefixRun reference = RunAlone(*uncached, Greedy(prompt, 20));
  for (const int32_t block_size : {16, 1}) {
    SchedulerConfig config = Config(true);
    config.block_size = block_size;
    auto cached = NewScheduler(config);
    RunAlone(*cached, Greedy(prompt, 20));
    const PrefixRun again = RunAlone(*cached, Greedy(prompt, 20));
    EXPECT_EQ(again.prefill_tokens, 1) << block_size;
    EXPECT_EQ(again.outcome.usage.cached_tokens, 159) << block_size;
    EXPECT_EQ(again.outcome.tokens, reference.outcome.tokens) << block_size;
  }
}

TEST_F(PrefixCacheTest, OneDifferentTokenEndsTheSharingAtItsBlock) {
  std::mt19937 random(19);
  const std::vector<int32_t> prompt = RandomPrompt(random, 300);
  auto uncached = NewScheduler(Config(false));
  auto cached = NewScheduler(Config(true));
  RunAlone(*cached, Greedy(prompt, 2));
  // The first and the last token of block 9 (positions 144 and 159).
  for (const size_t position : {size_t{144}, size_t{159}}) {
    std::vector<int32_t> changed = prompt;
    changed[position] = changed[position] == 'a' ? 'b' : 'a';
    const PrefixRun run = RunAlone(*cached, Greedy(changed, 6));
    EXPECT_EQ(run.outcome.usage.cached_tokens, 144) << "changed at " << position;
    EXPECT_EQ(run.outcome.tokens, RunAlone(*uncached, Greedy(changed, 6)).outcome.tokens);
  }
}

TEST_F(PrefixCacheTest, GeneratedTokensArePublishedForTheNextTurn) {
  std::mt19937 random(13);
  const std::vector<int32_t> prompt = RandomPrompt(random, 40);
  auto cached = NewScheduler(Config(true));
  const PrefixRun turn = RunAlone(*cached, Greedy(prompt, 60));
  // The next turn resends the conversation: the prompt, the reply, and a new message.
  const std::vector<int32_t> next =
      Concat(Concat(prompt, turn.outcome.tokens.at(0)), Letters(random, 30));
  const PrefixRun run = RunAlone(*cached, Greedy(next, 8));
  // The reply's last token was never computed; every whole block before it was.
  const int32_t computed_before = 40 + static_cast<int32_t>(turn.outcome.tokens.at(0).size()) - 1;
  EXPECT_EQ(run.outcome.usage.cached_tokens, computed_before / 16 * 16);
  auto uncached = NewScheduler(Config(false));
  EXPECT_EQ(run.outcome.tokens, RunAlone(*uncached, Greedy(next, 8)).outcome.tokens);
}

TEST_F(PrefixCacheTest, TenantsShareNothingUnlessTheyShareASalt) {
  std::mt19937 random(14);
  const Request request = Greedy(RandomPrompt(random, 300), 4);
  auto cached = NewScheduler(Config(true));
  RunAlone(*cached, OfTenant(request, "a"));
  EXPECT_EQ(RunAlone(*cached, OfTenant(request, "b")).outcome.usage.cached_tokens, 0);
  EXPECT_EQ(RunAlone(*cached, OfTenant(request, "a")).outcome.usage.cached_tokens, 288);

  // Tenants that opt into one group share with each other, not with the tenants themselves.
  RunAlone(*cached, OfTenant(request, "c", "team"));
  EXPECT_EQ(RunAlone(*cached, OfTenant(request, "d", "team")).outcome.usage.cached_tokens, 288);
  EXPECT_EQ(RunAlone(*cached, OfTenant(request, "team")).outcome.usage.cached_tokens, 0);

  // A request's cache_salt splits one tenant's cache.
  Request salted = OfTenant(request, "a");
  salted.cache_salt = "user-42";
  EXPECT_EQ(RunAlone(*cached, salted).outcome.usage.cached_tokens, 0);
  EXPECT_EQ(RunAlone(*cached, salted).outcome.usage.cached_tokens, 288);
}

TEST_F(PrefixCacheTest, ADisabledCacheSharesNothing) {
  std::mt19937 random(15);
  const Request request = Greedy(RandomPrompt(random, 200), 4);
  auto disabled = NewScheduler(Config(false));
  RunAlone(*disabled, request);
  EXPECT_EQ(RunAlone(*disabled, request).outcome.usage.cached_tokens, 0);
  EXPECT_EQ(disabled->Metrics().prefix_cache_queries, 0u);
}

// A KeepKV sequence shares a cached prefix and compacts only what follows it, as it does after
// a document; it edits no shared block and publishes none of its own.
TEST_F(PrefixCacheTest, AKeepKvSequenceProtectsTheCachedPrefixItShares) {
  std::mt19937 random(17);
  const std::vector<int32_t> prefix = RandomPrompt(random, 200);
  auto cached = NewScheduler(Config(true));
  const Request plain = Greedy(Concat(prefix, Letters(random, 30)), 12);
  const PrefixRun first = RunAlone(*cached, plain);

  Request keepkv = Greedy(Concat(prefix, Letters(random, 40)), 48);
  keepkv.keepkv.emplace();
  keepkv.keepkv->budget.tokens = 16;
  const PrefixRun compacted = RunAlone(*cached, keepkv);
  // 12 whole blocks of 16 lie inside the 200 shared tokens.
  EXPECT_EQ(compacted.outcome.usage.cached_tokens, 192);
  EXPECT_EQ(compacted.prefill_tokens, std::ssize(keepkv.prompt) - 192);
  const MetricsSnapshot metrics = cached->Metrics();
  EXPECT_GT(metrics.keepkv_merges + metrics.keepkv_evictions, 0u);
  EXPECT_EQ(RunAlone(*cached, keepkv).outcome.tokens, compacted.outcome.tokens);

  // The shared blocks are as the plain request left them: it repeats its output.
  const PrefixRun again = RunAlone(*cached, plain);
  EXPECT_EQ(again.outcome.usage.cached_tokens, 224);
  EXPECT_EQ(again.outcome.tokens, first.outcome.tokens);
  // The KeepKV sequence published nothing past the prefix it found.
  EXPECT_EQ(RunAlone(*cached, Greedy(keepkv.prompt, 2)).outcome.usage.cached_tokens, 192);

  // KeepKV scores the prompt by its last `window` queries: they are computed even when the
  // whole prompt is cached (the last block is then shared in part).
  Request repeated = keepkv;
  repeated.prompt = plain.prompt;
  const PrefixRun windowed = RunAlone(*cached, repeated);
  EXPECT_EQ(windowed.prefill_tokens, keepkv.keepkv->window);
  EXPECT_EQ(windowed.outcome.usage.cached_tokens,
            std::ssize(plain.prompt) - keepkv.keepkv->window);
}

// A fractional budget is a fraction of what the sequence owns: the prompt's unshared rest.
TEST_F(PrefixCacheTest, AKeepKvBudgetFractionCountsOnlyTheUnsharedPrompt) {
  std::mt19937 random(18);
  const std::vector<int32_t> prefix = RandomPrompt(random, 200);
  auto cached = NewScheduler(Config(true));
  RunAlone(*cached, Greedy(Concat(prefix, Letters(random, 30)), 2));

  Request keepkv = Greedy(Concat(prefix, Letters(random, 40)), 24);
  keepkv.keepkv.emplace();
  keepkv.keepkv->budget.fraction = 0.5;  // of 48 own tokens: 24 entries (of 240 it would be 120)
  auto handle = cached->Submit(keepkv);
  ASSERT_TRUE(handle.ok()) << handle.status();
  double compressed = 0.0;
  while (cached->HasWork()) {
    ASSERT_TRUE(cached->Step().ok());
    const MetricsSnapshot metrics = cached->Metrics();
    if (metrics.keepkv_sequences == 1) {
      compressed = std::max(compressed, metrics.keepkv_compressed_fraction);
    }
  }
  Outcome outcome;
  Drain(*handle, outcome);
  EXPECT_EQ(outcome.usage.cached_tokens, 192);
  // Own entries are held near 24 while the own tokens grow from 48 to 71.
  EXPECT_GT(compressed, 0.4);
}

TEST_F(PrefixCacheTest, CompletionsOfOneRequestMatchTheUncachedRun) {
  std::mt19937 random(16);
  const Request request = [&] {
    Request r = Seeded(RandomPrompt(random, 130), 12, 9);
    r.n = 3;
    return r;
  }();
  auto uncached = NewScheduler(Config(false));
  const PrefixRun reference = RunAlone(*uncached, request);
  auto cached = NewScheduler(Config(true));
  RunAlone(*cached, request);
  const PrefixRun run = RunAlone(*cached, request);
  EXPECT_EQ(run.outcome.usage.cached_tokens, 128);
  EXPECT_EQ(run.outcome.tokens, reference.outcome.tokens);
}

// Many requests over a few shared prefixes in a pool that holds a handful of them at once:
// cached blocks are evicted and reused, sequences preempted and recomputed, and every output is
// still the uncached one (run under the sanitizers too).
TEST_F(PrefixCacheTest, EvictionUnderPoolPressureNeverCorruptsARunningSequence) {
  std::mt19937 random(17);
  std::vector<std::vector<int32_t>> prefixes;
  for (int32_t length : {70, 150, 230}) prefixes.push_back(RandomPrompt(random, length));
  std::uniform_int_distribution<size_t> pick(0, prefixes.size() - 1);
  std::uniform_int_distribution<int32_t> suffix_length(0, 40);
  std::uniform_int_distribution<int32_t> max_tokens(1, 30);
  std::vector<Request> requests;
  for (int32_t i = 0; i < 40; ++i) {
    std::vector<int32_t> prompt = prefixes[pick(random)];
    // Some prompts stop inside a prefix, some extend it.
    prompt.resize(prompt.size() - static_cast<size_t>(suffix_length(random)) / 2);
    prompt = Concat(prompt, Letters(random, suffix_length(random)));
    requests.push_back(i % 2 == 0 ? Greedy(prompt, max_tokens(random))
                                   : Seeded(prompt, max_tokens(random), 100 + i));
  }

  uint64_t prompt_tokens = 0;
  for (const Request& request : requests) prompt_tokens += request.prompt.size();
  auto uncached = NewScheduler(Config(false));
  std::vector<Outcome> expected;
  for (const Request& request : requests) expected.push_back(RunAlone(*uncached, request).outcome);

  SchedulerConfig config = Config(true);
  config.max_num_batched_tokens = 96;
  config.max_num_seqs = 16;
  config.kv_cache_bytes = KvBytesForTokens(700);
  config.prefix_cache.kv_events = true;
  auto cached = NewScheduler(config);
  const int64_t heads = int64_t{model_->config().num_layers} * model_->config().num_kv_heads;
  uint64_t seen = 0;
  std::map<std::string, std::vector<int32_t>> followed;
  for (int32_t round = 0; round < 2; ++round) {
    std::vector<RequestHandle> handles;
    for (const Request& request : requests) handles.push_back(cached->Submit(request).value());
    std::vector<Outcome> outcomes(requests.size());
    int64_t preemptions = 0;
    while (cached->HasWork()) {
      auto report = cached->Step();
      ASSERT_TRUE(report.ok()) << report.status();
      preemptions += std::ssize(report->preempted);
      for (size_t i = 0; i < handles.size(); ++i) Drain(handles[i], outcomes[i]);
      FollowKvEvents(*cached->kv_events(), seen, followed);
      ASSERT_EQ(std::ssize(followed) * heads, cached->Metrics().prefix_cache_blocks);
    }
    for (size_t i = 0; i < requests.size(); ++i) {
      ASSERT_TRUE(outcomes[i].ended) << i;
      EXPECT_TRUE(outcomes[i].status.ok()) << outcomes[i].status;
      EXPECT_EQ(outcomes[i].tokens, expected[i].tokens) << "request " << i << " round " << round;
    }
    const MetricsSnapshot metrics = cached->Metrics();
    EXPECT_GT(metrics.prefix_cache_hits, 0u);
    // Each request is looked up once, however long it waited or often it was preempted.
    EXPECT_EQ(metrics.prefix_cache_queries, (round + 1) * prompt_tokens);
    EXPECT_LE(metrics.prefix_cache_blocks, metrics.kv_blocks_total);
    EXPECT_EQ(metrics.kv_blocks_free, metrics.kv_blocks_total) << "a block leaked";
    EXPECT_GT(preemptions, 0) << "the pool should be too small for the batch";
  }
}

TEST_F(PrefixCacheTest, TheCacheKeepsAtMostItsShareOfThePool) {
  std::mt19937 random(18);
  SchedulerConfig config = Config(true);
  config.kv_cache_bytes = KvBytesForTokens(2000);
  config.prefix_cache.max_pool_fraction = 0.25;  // 31 blocks of 16 tokens
  auto cached = NewScheduler(config);
  std::vector<std::vector<int32_t>> prompts;
  for (int32_t i = 0; i < 6; ++i) {
    prompts.push_back(RandomPrompt(random, 400));  // 25 whole blocks each
    RunAlone(*cached, Greedy(prompts.back(), 2));
    const MetricsSnapshot metrics = cached->Metrics();
    EXPECT_GT(metrics.prefix_cache_blocks, 0);
    EXPECT_LE(metrics.prefix_cache_blocks, metrics.kv_blocks_total / 4);
  }
  // The latest prompt stays whole; the first left.
  EXPECT_EQ(RunAlone(*cached, Greedy(prompts.back(), 2)).outcome.usage.cached_tokens, 399);
  EXPECT_EQ(RunAlone(*cached, Greedy(prompts.front(), 2)).outcome.usage.cached_tokens, 0);
}

TEST_F(PrefixCacheTest, AChainLeavesFromItsEnd) {
  std::mt19937 random(21);
  SchedulerConfig config = Config(true);
  config.kv_cache_bytes = KvBytesForTokens(2000);
  config.prefix_cache.max_pool_fraction = 0.25;  // 31 blocks of 16 tokens
  auto cached = NewScheduler(config);
  const std::vector<int32_t> first = RandomPrompt(random, 400);  // 25 whole blocks
  RunAlone(*cached, Greedy(first, 2));
  RunAlone(*cached, Greedy(RandomPrompt(random, 400), 2));
  // The second prompt's 25 blocks pushed out the first's last 19: its first 6 stay.
  EXPECT_EQ(RunAlone(*cached, Greedy(first, 2)).outcome.usage.cached_tokens, 6 * 16);
}

}  // namespace
}  // namespace kvd::scheduler::testing
