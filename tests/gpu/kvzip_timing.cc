#include "tests/gpu/kvzip_timing.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <vector>

#include "cache_store/kvzip/compression_spec.h"
#include "cache_store/kvzip/document_compressor.h"
#include "engine/kv_cache.h"

namespace kvd::bench {
namespace {

using Clock = std::chrono::steady_clock;

double MillisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

std::vector<int32_t> RandomIds(int32_t count, int32_t vocab_size, std::mt19937_64& random) {
  std::uniform_int_distribution<int32_t> ids(0, vocab_size - 1);
  std::vector<int32_t> tokens(count);
  for (int32_t& token : tokens) token = ids(random);
  return tokens;
}

// One compression, stepped as scheduler/internal/step_loop.cc's StepLoop::Step does with
// no requests running or waiting: every step plans the whole token budget for the job
// (CompressionJobs::Plan), runs Model::Forward, and commits.
absl::StatusOr<KvzipTiming> CompressOnce(engine::Model& model, engine::KvBlockPool& pool,
                                         cache_store::DocumentCompressor& compressor,
                                         int32_t token_budget) {
  KvzipTiming timing;
  timing.prefill_tokens = compressor.input().length();
  timing.scoring_tokens = compressor.total_tokens() - compressor.input().length();
  std::vector<engine::SequenceStep> steps;
  engine::StepLogits logits;
  model.backend().Synchronize();
  Clock::time_point start = Clock::now();
  bool prefilled = false;
  while (!compressor.scored()) {
    steps.clear();
    absl::StatusOr<int32_t> planned = compressor.Plan(token_budget, pool, steps);
    if (!planned.ok() || *planned == 0) {
      compressor.Release(pool);
      return planned.ok() ? absl::ResourceExhaustedError(
                                "kvzip timing: the KV pool has no blocks for the job")
                          : planned.status();
    }
    if (auto status = model.Forward(steps, pool, logits); !status.ok()) {
      compressor.Release(pool);
      return status;
    }
    compressor.Commit(pool);
    if (!prefilled && compressor.done_tokens() == timing.prefill_tokens) {
      model.backend().Synchronize();
      timing.prefill_ms = MillisecondsSince(start);
      start = Clock::now();
      prefilled = true;
    }
  }
  model.backend().Synchronize();
  timing.scoring_ms = MillisecondsSince(start);
  start = Clock::now();
  auto payload = compressor.Finish(pool);
  if (!payload.ok()) {
    compressor.Release(pool);
    return payload.status();
  }
  timing.finish_ms = MillisecondsSince(start);
  return timing;
}

}  // namespace

absl::StatusOr<KvzipTiming> MeasureKvzipScoring(engine::Model& model,
                                                const KvzipTimingOptions& options) {
  if (options.repeats < 1 || options.max_num_batched_tokens < 1 || options.prefix_tokens < 0) {
    return absl::InvalidArgumentError(
        "kvzip timing: repeats and the token budget must be positive, the prefix not negative");
  }
  const engine::ModelConfig& config = model.config();
  std::mt19937_64 random(options.seed);
  cache_store::DocumentInput input;
  input.prefix_ids = RandomIds(options.prefix_tokens, config.vocab_size, random);
  input.document_ids = RandomIds(options.document_tokens, config.vocab_size, random);
  // As long as the published prompts' tokens with Llama 3's tokenizer (bench/document_bench.cc).
  cache_store::DocumentPrompts prompts;
  prompts.chunk_tokens = options.chunk_tokens;
  prompts.repeat_all = RandomIds(8, config.vocab_size, random);
  prompts.repeat_from = RandomIds(14, config.vocab_size, random);
  prompts.answer_prefix = RandomIds(5, config.vocab_size, random);
  auto new_compressor = [&] {
    return cache_store::DocumentCompressor::Create(
        config, input, prompts, /*query_tokens=*/{},
        {.method = cache_store::CompressionMethod::kKvzip, .ratio = 1.0});
  };
  auto sizing = new_compressor();
  if (!sizing.ok()) return sizing.status();
  auto pool = engine::KvBlockPool::Create(
      model.backend(),
      {.num_blocks = static_cast<int32_t>((*sizing)->PeakBlocks(options.block_size)),
       .block_size = options.block_size,
       .head_dim = config.head_dim});
  if (!pool.ok()) return pool.status();

  // The first compression is a warm-up: per-size allocations stay out of the figures.
  std::vector<double> prefill_ms, scoring_ms, finish_ms;
  KvzipTiming result;
  for (int32_t run = 0; run <= options.repeats; ++run) {
    auto compressor = new_compressor();
    if (!compressor.ok()) return compressor.status();
    auto timing = CompressOnce(model, **pool, **compressor, options.max_num_batched_tokens);
    if (!timing.ok()) return timing.status();
    if (run == 0) continue;
    result = *timing;
    prefill_ms.push_back(timing->prefill_ms);
    scoring_ms.push_back(timing->scoring_ms);
    finish_ms.push_back(timing->finish_ms);
  }
  result.prefill_ms = Median(prefill_ms);
  result.scoring_ms = Median(scoring_ms);
  result.finish_ms = Median(finish_ms);
  return result;
}

}  // namespace kvd::bench
