// Shared by the scheduler tests: the bundled model loaded once, a scheduler over it driven
// step by step on the test thread, and the outcome of a request collected from its events.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/model.h"
#include "kernels/backend.h"
#include "scheduler/scheduler.h"
#include "tests/unit/engine/reference_model.h"
#include "text/tokenizer.h"

namespace kvd::scheduler::testing {

struct Outcome {
  std::vector<std::vector<int32_t>> tokens;  // per choice
  std::vector<std::string> text;             // per choice
  std::vector<std::optional<FinishReason>> finish;
  std::vector<std::string> stop_string;
  std::vector<int32_t> events_per_choice;
  std::vector<std::vector<float>> logprobs;  // per choice, when asked for
  Usage usage;
  absl::Status status;
  bool ended = false;  // the final event arrived
};

// Adds `event` to `outcome`.
inline void Record(const Event& event, Outcome& outcome) {
  if (event.final) {
    outcome.ended = true;
    outcome.usage = event.usage;
    outcome.status = event.status;
    return;
  }
  const size_t index = static_cast<size_t>(event.index);
  if (outcome.tokens.size() <= index) {
    outcome.tokens.resize(index + 1);
    outcome.text.resize(index + 1);
    outcome.finish.resize(index + 1);
    outcome.stop_string.resize(index + 1);
    outcome.events_per_choice.resize(index + 1);
    outcome.logprobs.resize(index + 1);
  }
  EXPECT_FALSE(outcome.finish[index].has_value()) << "an event after the choice finished";
  auto& tokens = outcome.tokens[index];
  tokens.insert(tokens.end(), event.token_ids.begin(), event.token_ids.end());
  outcome.text[index] += event.text;
  for (const engine::SampledToken& token : event.logprobs) {
    outcome.logprobs[index].push_back(token.logprob);
  }
  outcome.finish[index] = event.finish_reason;
  outcome.stop_string[index] = event.stop_string;
  ++outcome.events_per_choice[index];
}

// Takes every event available now, without waiting.
inline void Drain(RequestHandle& handle, Outcome& outcome) {
  while (auto event = handle.Next(absl::ZeroDuration())) Record(*event, outcome);
}

// Takes events until the final one, waiting for each (a scheduler running on its thread).
inline void DrainToEnd(RequestHandle& handle, Outcome& outcome) {
  while (!outcome.ended) {
    auto event = handle.Next(absl::Seconds(60));
    ASSERT_TRUE(event.has_value()) << "no event within a minute";
    Record(*event, outcome);
  }
}

class SchedulerTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    backend_ = kernels::CreateBackend("cpu", {.num_threads = 2}).value().release();
    const auto dir = engine::testing::BundledModelDir();
    model_ = engine::Model::Load(dir, *backend_).value().release();
    tokenizer_ = text::Tokenizer::FromFile(dir / "tokenizer.json").value().release();
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    delete model_;
    delete backend_;
  }

  static SchedulerConfig SmallConfig() {
    SchedulerConfig config;
    config.max_num_seqs = 64;
    config.max_num_batched_tokens = 256;
    config.kv_cache_bytes = size_t{64} << 20;
    // Tests step the scheduler themselves: each constrained sequence's mask is ready when
    // sampled, so that steps are the same every run (constrained_output_test runs workers).
    config.constraint_threads = 0;
    return config;
  }
  // Bytes of KV cache for `tokens` tokens per (layer, kv head), in blocks of 16.
  static size_t KvBytesForTokens(int64_t tokens, kernels::DType dtype = kernels::DType::kF32) {
    const auto& config = model_->config();
    const int64_t blocks = (tokens + 15) / 16 * config.num_layers * config.num_kv_heads;
    return static_cast<size_t>(blocks) *
           engine::KvBlockPool::BlockBytes(16, config.head_dim, dtype);
  }

  std::unique_ptr<Scheduler> NewScheduler(const SchedulerConfig& config) {
    auto scheduler = Scheduler::Create(*model_, tokenizer_, config);
    EXPECT_TRUE(scheduler.ok()) << scheduler.status();
    return *std::move(scheduler);
  }

  // Steps until nothing is left; returns the number of steps.
  static int32_t RunUntilIdle(Scheduler& scheduler) {
    int32_t steps = 0;
    while (scheduler.HasWork()) {
      auto report = scheduler.Step();
      EXPECT_TRUE(report.ok()) << report.status();
      ++steps;
    }
    return steps;
  }

  // Seeded prompts of bytes (ids 0-255 are the byte tokens of the bundled model) after BOS.
  static std::vector<int32_t> RandomPrompt(std::mt19937& random, int32_t length) {
    std::vector<int32_t> prompt = {tokenizer_->TokenToId("<|begin_of_text|>").value()};
    std::uniform_int_distribution<int32_t> letter('a', 'z');
    for (int32_t i = 1; i < length; ++i) prompt.push_back(letter(random));
    return prompt;
  }

  static Request Greedy(std::vector<int32_t> prompt, int32_t max_tokens) {
    Request request;
    request.prompt = std::move(prompt);
    request.sampling.temperature = 0.0f;
    request.max_tokens = max_tokens;
    request.ignore_eos = true;
    return request;
  }

  inline static kernels::Backend* backend_ = nullptr;
  inline static engine::Model* model_ = nullptr;
  inline static text::Tokenizer* tokenizer_ = nullptr;
};

}  // namespace kvd::scheduler::testing
