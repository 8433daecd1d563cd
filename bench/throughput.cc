#include "bench/throughput.h"

#include <algorithm>
#include <memory>
#include <random>

#include "absl/strings/str_cat.h"
#include "bench/stopwatch.h"

namespace kvd::bench {
namespace {

absl::StatusOr<ThroughputResult> MeasureBatch(engine::Model& model, engine::KvBlockPool& pool,
                                              int32_t batch_size, const ThroughputOptions& options,
                                              std::mt19937& random) {
  const engine::ModelConfig& config = model.config();
  std::uniform_int_distribution<int32_t> token_ids(0, config.vocab_size - 1);
  std::vector<std::unique_ptr<engine::SequenceKv>> kvs;
  std::vector<std::vector<int32_t>> prompts(batch_size);
  std::vector<engine::SequenceStep> steps;
  auto release = [&] {
    for (auto& kv : kvs) kv->Release(pool);
  };
  for (int32_t b = 0; b < batch_size; ++b) {
    kvs.push_back(std::make_unique<engine::SequenceKv>(config.num_layers, config.num_kv_heads));
    for (int32_t i = 0; i < options.prompt_tokens; ++i) prompts[b].push_back(token_ids(random));
    if (auto status = kvs[b]->Reserve(pool, options.prompt_tokens + options.decode_tokens);
        !status.ok()) {
      release();
      return status;
    }
    steps.push_back({kvs[b].get(), prompts[b], engine::LogitRows::kLast});
  }
  ThroughputResult result;
  result.batch_size = batch_size;
  // Greedy decoding needs each row's most likely token only: the top logit, as the server
  // asks for its rows' top logits (no whole row crosses to the host).
  engine::StepLogits logits;
  const engine::LogitsRequest greedy{.top_k = 1,
                                     .inverse_temperatures = std::vector<float>(batch_size, 1.0f)};
  const auto prefill_start = Clock::now();
  if (auto status = model.Forward(steps, pool, logits, greedy); !status.ok()) {
    release();
    return status;
  }
  result.prefill_seconds = SecondsSince(prefill_start);
  result.prefill_tokens_per_second =
      static_cast<double>(batch_size) * options.prompt_tokens / result.prefill_seconds;
  result.prefill_gflop_per_second =
      result.prefill_tokens_per_second * PromptTokenFlops(config, options.prompt_tokens) / 1e9;

  std::vector<int32_t> next(batch_size);
  if (options.decode_phase) options.decode_phase(true);
  const auto decode_start = Clock::now();
  for (int32_t step = 0; step < options.decode_tokens; ++step) {
    for (int32_t b = 0; b < batch_size; ++b) {
      next[b] = logits.top(b).ids[0];
      steps[b].tokens = std::span<const int32_t>(&next[b], 1);
    }
    if (auto status = model.Forward(steps, pool, logits, greedy); !status.ok()) {
      if (options.decode_phase) options.decode_phase(false);
      release();
      return status;
    }
  }
  result.decode_seconds = SecondsSince(decode_start);
  if (options.decode_phase) options.decode_phase(false);
  result.decode_tokens_per_second =
      static_cast<double>(batch_size) * options.decode_tokens / result.decode_seconds;
  result.decode_step_ms = 1000.0 * result.decode_seconds / std::max(options.decode_tokens, 1);
  release();
  return result;
}

}  // namespace

double PromptTokenFlops(const engine::ModelConfig& config, int32_t prompt_tokens) {
  const double hidden = config.hidden_size;
  const double query_width = static_cast<double>(config.num_heads) * config.head_dim;
  const double kv_width = static_cast<double>(config.num_kv_heads) * config.head_dim;
  // q, k and v; o; gate, up and down.
  const double projections = hidden * (query_width + 2 * kv_width) + query_width * hidden +
                             3 * hidden * config.intermediate_size;
  // Token i of the prompt weighs i + 1 keys and values in every query head: (P + 1) / 2 each on
  // average, a dot product and a weighted sum.
  const double attention = 2 * query_width * (prompt_tokens + 1) / 2.0;
  const double head = static_cast<double>(config.vocab_size) * hidden / prompt_tokens;
  return 2 * (config.num_layers * (projections + attention) + head);
}

absl::StatusOr<std::vector<ThroughputResult>> MeasureThroughput(engine::Model& model,
                                                                const ThroughputOptions& options) {
  const engine::ModelConfig& config = model.config();
  if (options.prompt_tokens <= 0 || options.decode_tokens < 0) {
    return absl::InvalidArgumentError("prompt tokens must be positive and decode tokens >= 0");
  }
  if (options.prompt_tokens + options.decode_tokens > config.max_position_embeddings) {
    return absl::InvalidArgumentError(
        absl::StrCat("prompt plus decode tokens exceed the model's context of ",
                     config.max_position_embeddings));
  }
  const int32_t max_batch =
      *std::max_element(options.batch_sizes.begin(), options.batch_sizes.end());
  const int64_t blocks_per_head =
      (options.prompt_tokens + options.decode_tokens + options.block_size - 1) / options.block_size;
  auto pool = engine::KvBlockPool::Create(
      model.backend(), {.num_blocks = static_cast<int32_t>(blocks_per_head * max_batch *
                                                           config.num_layers * config.num_kv_heads),
                        .block_size = options.block_size,
                        .head_dim = config.head_dim,
                        .dtype = options.kv_cache_dtype});
  if (!pool.ok()) return pool.status();
  std::mt19937 random(static_cast<uint32_t>(options.seed));
  // A short warm-up run, so first-touch page faults and thread start-up are not measured.
  ThroughputOptions warm_up = options;
  warm_up.prompt_tokens = std::min(options.prompt_tokens, 16);
  warm_up.decode_tokens = std::min(options.decode_tokens, 2);
  if (auto warm = MeasureBatch(model, **pool, 1, warm_up, random); !warm.ok()) return warm.status();

  std::vector<ThroughputResult> results;
  for (int32_t batch_size : options.batch_sizes) {
    if (batch_size <= 0) return absl::InvalidArgumentError("batch sizes must be positive");
    auto result = MeasureBatch(model, **pool, batch_size, options, random);
    if (!result.ok()) return result.status();
    results.push_back(*result);
  }
  return results;
}

}  // namespace kvd::bench
