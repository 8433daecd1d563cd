#include "bench/scheduler_throughput.h"

#include <optional>
#include <random>

#include "absl/time/clock.h"
#include "scheduler/scheduler.h"

namespace kvd::bench {
namespace {

absl::StatusOr<SchedulerBenchResult> MeasureOne(engine::Model& model,
                                                const text::Tokenizer* tokenizer,
                                                const SchedulerBenchOptions& options,
                                                int32_t concurrency, bool prefix_cache,
                                                bool constrained) {
  if (concurrency < 1) {
    return absl::InvalidArgumentError("concurrency must be at least 1");
  }
  if (options.shared_prefix_tokens < 0 || options.shared_prefix_tokens >= options.prompt_tokens) {
    return absl::InvalidArgumentError("the shared prefix must be shorter than the prompt");
  }
  if (options.decode_tokens < 1) {
    return absl::InvalidArgumentError("requests must generate at least one token");
  }
  scheduler::SchedulerConfig config;
  config.max_num_seqs = concurrency;
  config.max_num_batched_tokens = std::max(2048, concurrency);
  config.kv_cache_dtype = options.kv_cache_dtype;
  config.prefix_cache.enabled = prefix_cache;
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
  std::vector<int32_t> shared_prefix;
  for (int32_t t = 0; t < options.shared_prefix_tokens; ++t) {
    shared_prefix.push_back(token_ids(random));
  }
  std::vector<scheduler::RequestHandle> handles;
  std::vector<absl::Time> submitted;
  std::vector<std::optional<absl::Time>> first_token;
  auto submit = [&]() -> absl::Status {
    scheduler::Request request;
    request.prompt = shared_prefix;
    while (std::ssize(request.prompt) < options.prompt_tokens) {
      request.prompt.push_back(token_ids(random));
    }
    request.sampling.temperature = 0.0f;
    request.max_tokens = options.decode_tokens;
    request.ignore_eos = !constrained;
    if (constrained) request.constraint = options.constraint;
    auto handle = (*scheduler)->Submit(std::move(request));
    if (!handle.ok()) return handle.status();
    handles.push_back(*std::move(handle));
    submitted.push_back(absl::Now());
    first_token.emplace_back();
    return absl::OkStatus();
  };
  const absl::Time start = absl::Now();
  // With a shared prefix, the first request computes it alone; the rest come after.
  const int32_t first_wave = options.shared_prefix_tokens > 0 ? 1 : concurrency;
  for (int32_t i = 0; i < first_wave; ++i) {
    if (absl::Status status = submit(); !status.ok()) return status;
  }
  SchedulerBenchResult result;
  result.concurrency = concurrency;
  result.prefix_cache = prefix_cache;
  result.constrained = constrained;
  absl::Duration decode_time, decode_forward, all_steps;
  int64_t decode_tokens = 0, decode_steps = 0;
  while ((*scheduler)->HasWork()) {
    auto report = (*scheduler)->Step();
    if (!report.ok()) return report.status();
    result.prefill_tokens += report->num_prefill_tokens;
    all_steps += report->step_time;
    for (size_t i = 0; i < handles.size(); ++i) {
      while (auto event = handles[i].Next(absl::ZeroDuration())) {
        if (!first_token[i] && !event->token_ids.empty()) first_token[i] = absl::Now();
      }
    }
    if (std::ssize(handles) < concurrency && first_token[0]) {
      while (std::ssize(handles) < concurrency) {
        if (absl::Status status = submit(); !status.ok()) return status;
      }
    }
    if (report->num_prefill_tokens == 0 && report->num_decode_tokens > 0) {
      decode_time += report->step_time;
      decode_forward += report->forward_time;
      decode_tokens += report->num_decode_tokens;
      ++decode_steps;
    }
  }
  result.total_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (all_steps > absl::ZeroDuration()) {
    result.constraint_fraction = (*scheduler)->Metrics().constraint_mask_seconds_total /
                                 absl::ToDoubleSeconds(all_steps);
  }
  const size_t later = first_wave == concurrency ? 0 : 1;
  double ttft_ms = 0.0;
  for (size_t i = later; i < handles.size(); ++i) {
    if (first_token[i]) ttft_ms += absl::ToDoubleMilliseconds(*first_token[i] - submitted[i]);
  }
  if (handles.size() > later) ttft_ms /= static_cast<double>(handles.size() - later);
  result.mean_ttft_ms = ttft_ms;
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
    engine::Model& model, const text::Tokenizer* tokenizer, const SchedulerBenchOptions& options) {
  std::vector<SchedulerBenchResult> results;
  for (int32_t concurrency : options.concurrency) {
    // Without a shared prefix there is nothing to cache: one run, with the server's default.
    for (const bool prefix_cache : options.shared_prefix_tokens > 0
                                       ? std::vector<bool>{true, false}
                                       : std::vector<bool>{true}) {
      for (const bool constrained : options.constraint != nullptr ? std::vector<bool>{false, true}
                                                                  : std::vector<bool>{false}) {
        auto result = MeasureOne(model, tokenizer, options, concurrency, prefix_cache, constrained);
        if (!result.ok()) return result.status();
        results.push_back(*result);
      }
    }
  }
  return results;
}

}  // namespace kvd::bench
