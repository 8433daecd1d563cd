// What the scheduler reports, on a fake clock that advances 10 ms per step.
#include "scheduler/metrics.h"

#include <gtest/gtest.h>

#include "tests/unit/scheduler/fake_clock.h"
#include "tests/unit/scheduler/scheduler_fixture.h"

namespace kvd::scheduler::testing {
namespace {

class SchedulerMetricsTest : public SchedulerTest {};

TEST_F(SchedulerMetricsTest, CountsTokensLatenciesAndTenants) {
  FakeClock clock;
  SchedulerConfig config = SmallConfig();
  config.max_num_seqs = 2;
  auto scheduler = Scheduler::Create(*model_, tokenizer_, config, clock);
  ASSERT_TRUE(scheduler.ok());
  EXPECT_GT((*scheduler)->Metrics().kv_blocks_total, 0);  // known before the first step
  std::mt19937 random(3);
  std::vector<RequestHandle> handles;
  int32_t prompt_tokens = 0;
  for (int i = 0; i < 3; ++i) {
    Request request = Greedy(RandomPrompt(random, 20 + i), 5);
    request.tenant.id = i == 2 ? "b" : "a";
    prompt_tokens += static_cast<int32_t>(request.prompt.size());
    handles.push_back(*(*scheduler)->Submit(std::move(request)));
  }
  int32_t listened = 0;
  handles[0].SetListener([&] { ++listened; });

  ASSERT_TRUE((*scheduler)->Step().ok());
  MetricsSnapshot metrics = (*scheduler)->Metrics();
  EXPECT_EQ(metrics.num_running, 2);
  EXPECT_EQ(metrics.num_waiting, 1);
  EXPECT_EQ(metrics.tenants.at("a").running + metrics.tenants.at("b").running, 2);
  EXPECT_EQ(metrics.tenants.at("a").waiting + metrics.tenants.at("b").waiting, 1);
  EXPECT_GT(metrics.kv_usage, 0.0);
  while ((*scheduler)->HasWork()) {
    clock.Advance(absl::Milliseconds(10));
    ASSERT_TRUE((*scheduler)->Step().ok());
  }

  metrics = (*scheduler)->Metrics();
  EXPECT_EQ(metrics.prompt_tokens, static_cast<uint64_t>(prompt_tokens));
  EXPECT_EQ(metrics.generation_tokens, 15u);
  EXPECT_EQ(metrics.tenants.at("a").generation_tokens, 10u);
  EXPECT_EQ(metrics.tenants.at("b").generation_tokens, 5u);
  EXPECT_EQ(metrics.tenants.at("b").prompt_tokens, 22u);
  EXPECT_EQ(metrics.computed_tokens, static_cast<uint64_t>(prompt_tokens + 15 - 3));
  EXPECT_EQ(metrics.tokens_per_step.sum, static_cast<double>(metrics.computed_tokens));
  EXPECT_EQ(metrics.finished_sequences.at(FinishReason::kLength), 3u);
  EXPECT_EQ(metrics.queue_seconds.count, 3u);
  EXPECT_EQ(metrics.time_to_first_token_seconds.count, 3u);
  EXPECT_EQ(metrics.inter_token_seconds.count, 12u);
  EXPECT_EQ(metrics.e2e_request_seconds.count, 3u);
  // Two requests start at once; the third waits for a slot, which opens after 5 tokens.
  EXPECT_DOUBLE_EQ(metrics.queue_seconds.sum, 0.05);
  // Every later token comes one 10 ms step after the previous one of its sequence.
  EXPECT_NEAR(metrics.inter_token_seconds.sum, 0.12, 1e-9);
  EXPECT_EQ(metrics.num_running + metrics.num_waiting, 0);
  EXPECT_EQ(metrics.kv_usage, 0.0);
  // The listener ran once per event of its request: 5 tokens and the final event.
  EXPECT_EQ(listened, 6);
}

TEST_F(SchedulerMetricsTest, KvCacheSizedByFractionOfMemory) {
  SchedulerConfig config = SmallConfig();
  config.kv_cache_memory_fraction = 0.0005;
  auto scheduler = Scheduler::Create(*model_, tokenizer_, config);
  ASSERT_TRUE(scheduler.ok()) << scheduler.status();
  const auto expected = engine::KvBlockPool::BlocksInBytes(
      static_cast<size_t>(0.0005 * static_cast<double>(backend_->MemoryBytes())), 16,
      model_->config().head_dim, kernels::DType::kF32);
  EXPECT_EQ((*scheduler)->Metrics().kv_blocks_total, expected);
}

TEST_F(SchedulerMetricsTest, Bf16KvCacheHoldsTwiceTheBlocksAndServes) {
  SchedulerConfig config = SmallConfig();
  config.kv_cache_bytes = KvBytesForTokens(256);
  auto f32 = Scheduler::Create(*model_, tokenizer_, config);
  ASSERT_TRUE(f32.ok()) << f32.status();
  config.kv_cache_bytes = KvBytesForTokens(256, kernels::DType::kBF16);
  config.kv_cache_dtype = kernels::DType::kBF16;
  auto bf16 = Scheduler::Create(*model_, tokenizer_, config);
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  EXPECT_EQ((*bf16)->Metrics().kv_blocks_total, (*f32)->Metrics().kv_blocks_total);
  config.kv_cache_bytes = KvBytesForTokens(256);
  auto bf16_in_f32_bytes = Scheduler::Create(*model_, tokenizer_, config);
  ASSERT_TRUE(bf16_in_f32_bytes.ok());
  EXPECT_GE((*bf16_in_f32_bytes)->Metrics().kv_blocks_total,
            2 * (*f32)->Metrics().kv_blocks_total * 9 / 10);  // log-votes stay f32

  // A request runs to its end on the bf16 cache and gives its blocks back.
  Request request;
  request.prompt = {5, 6, 7, 8};
  request.max_tokens = 6;
  request.ignore_eos = true;
  auto handle = (*bf16)->Submit(std::move(request));
  ASSERT_TRUE(handle.ok()) << handle.status();
  int tokens = 0;
  bool final = false;
  while ((*bf16)->HasWork()) {
    ASSERT_TRUE((*bf16)->Step().ok());
    while (auto event = handle->Next(absl::ZeroDuration())) {
      tokens += static_cast<int>(event->token_ids.size());
      if (event->final) {
        final = true;
        EXPECT_TRUE(event->status.ok()) << event->status;
      }
    }
  }
  EXPECT_TRUE(final);
  EXPECT_EQ(tokens, 6);
  EXPECT_EQ((*bf16)->Metrics().kv_usage, 0.0);
}

TEST_F(SchedulerMetricsTest, ConfigIsValidated) {
  auto code = [&](SchedulerConfig config) {
    return Scheduler::Create(*model_, tokenizer_, config).status().code();
  };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  SchedulerConfig config = SmallConfig();
  config.max_num_batched_tokens = config.max_num_seqs - 1;
  EXPECT_EQ(code(config), kInvalid);
  config = SmallConfig();
  config.block_size = 0;
  EXPECT_EQ(code(config), kInvalid);
  config = SmallConfig();
  config.kv_cache_memory_fraction = 1.5;
  EXPECT_EQ(code(config), kInvalid);
  config = SmallConfig();
  config.kv_cache_bytes = 1000;  // less than one block per layer and kv head
  EXPECT_EQ(code(config), kInvalid);
  config = SmallConfig();
  config.admission_watermark = 0.9;
  EXPECT_EQ(code(config), kInvalid);
  config = SmallConfig();
  config.max_queued_requests = 0;
  EXPECT_EQ(code(config), kInvalid);
  config = SmallConfig();
  config.kv_cache_dtype = kernels::DType::kF16;
  EXPECT_EQ(code(config), kInvalid);
}

}  // namespace
}  // namespace kvd::scheduler::testing
