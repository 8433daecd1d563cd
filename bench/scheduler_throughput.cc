#include "bench/scheduler_throughput.h"

#include <random>

#include "absl/time/clock.h"
#include "scheduler/scheduler.h"

namespace kvd::bench {
namespace {

absl::StatusOr<SchedulerBenchResult> MeasureOne(engine::Model& model,
                                                const engine::Tokenizer* tokenizer,
                                                const SchedulerBenchOptions& options,
                                                int32_t concurrency) {
  if (concurrency < 1) {
    return absl::InvalidArgumentError("concurrency must be at least 1");
  }
  scheduler::SchedulerConfig config;
  config.max_num_seqs = concurrency;
  config.max_num_batched_tokens = std::max(2048, concurrency);
  config.kv_cache_dtype = options.kv_cache_dtype;
  const int64_t tokens_per_sequence = int64_t{options.prompt_tokens} + options.decode_tokens;
  const engine::ModelConfig& model_config = model.config();
  config.kv_cache_bytes =
      static_cast<size_t>((tokens_per_sequence + config.block_size) / config.block_size *
                          concurrency * model_config.num_layers * model_config.num_kv_heads) *
      engine::KvBlockPool::BlockBytes(config.block_size, model_config.head_dim,
                                      config.kv_cache_dtype);
  auto scheduler = scheduler::Scheduler::Create(model, tokenizer, config);
  if (!scheduler.ok()) return scheduler.status();

  std::mt19937_64 random(options.seed);
  std::uniform_int_distribution<int32_t> token_ids(0, model_config.vocab_size - 1);
  std::vector<scheduler::RequestHandle> handles;
  const absl::Time start = absl::Now();
  for (int32_t i = 0; i < concurrency; ++i) {
    scheduler::Request request;
    for (int32_t t = 0; t < options.prompt_tokens; ++t) request.prompt.push_back(token_ids(random));
    request.sampling.temperature = 0.0f;
    request.max_tokens = options.decode_tokens;
    request.ignore_eos = true;
    auto handle = (*scheduler)->Submit(std::move(request));
    if (!handle.ok()) return handle.status();
    handles.push_back(*std::move(handle));
  }
  absl::Duration decode_time, decode_forward;
  int64_t decode_tokens = 0, decode_steps = 0;
  while ((*scheduler)->HasWork()) {
    auto report = (*scheduler)->Step();
    if (!report.ok()) return report.status();
    for (auto& handle : handles) {
      while (handle.Next(absl::ZeroDuration())) {
      }
    }
    if (report->num_prefill_tokens == 0 && report->num_decode_tokens > 0) {
      decode_time += report->step_time;
      decode_forward += report->forward_time;
      decode_tokens += report->num_decode_tokens;
      ++decode_steps;
    }
  }
  SchedulerBenchResult result;
  result.concurrency = concurrency;
  result.total_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  const double decode_seconds = absl::ToDoubleSeconds(decode_time);
  if (decode_steps > 0 && decode_seconds > 0.0) {
    result.decode_tokens_per_second = static_cast<double>(decode_tokens) / decode_seconds;
    result.decode_step_ms = 1e3 * decode_seconds / static_cast<double>(decode_steps);
    result.overhead_fraction = 1.0 - absl::ToDoubleSeconds(decode_forward) / decode_seconds;
  }
  return result;
}

}  // namespace

absl::StatusOr<std::vector<SchedulerBenchResult>> MeasureSchedulerThroughput(
    engine::Model& model, const engine::Tokenizer* tokenizer,
    const SchedulerBenchOptions& options) {
  std::vector<SchedulerBenchResult> results;
  for (int32_t concurrency : options.concurrency) {
    auto result = MeasureOne(model, tokenizer, options, concurrency);
    if (!result.ok()) return result.status();
    results.push_back(*result);
  }
  return results;
}

}  // namespace kvd::bench
