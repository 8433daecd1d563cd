#include "bench/document_bench.h"

#include <cmath>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cache_store/kvzip/compression_spec.h"
#include "cache_store/kvzip/document_compressor.h"
#include "cache_store/kvzip/recut.h"
#include "cache_store/store/payload_codec.h"
#include "engine/kv_cache.h"
#include "scheduler/scheduler.h"

namespace kvd::bench {
namespace {

class RandomTokens {
 public:
  RandomTokens(uint64_t seed, int32_t vocab_size) : random_(seed), ids_(0, vocab_size - 1) {}
  std::vector<int32_t> Take(int32_t count) {
    std::vector<int32_t> tokens(count);
    for (int32_t& token : tokens) token = ids_(random_);
    return tokens;
  }

 private:
  std::mt19937_64 random_;
  std::uniform_int_distribution<int32_t> ids_;
};

double Milliseconds(absl::Duration duration) { return absl::ToDoubleMilliseconds(duration); }

// Submits `request` (max_tokens 1) and steps until it ends. Returns the time from Submit to its
// first token event.
absl::StatusOr<absl::Duration> TimeToFirstToken(scheduler::Scheduler& scheduler,
                                                scheduler::Request request) {
  const absl::Time start = absl::Now();
  auto handle = scheduler.Submit(std::move(request));
  if (!handle.ok()) return handle.status();
  std::optional<absl::Duration> first;
  while (!handle->finished()) {
    if (!scheduler.HasWork()) return absl::InternalError("the request ended without its events");
    auto report = scheduler.Step();
    if (!report.ok()) return report.status();
    while (auto event = handle->Next(absl::ZeroDuration())) {
      if (!first && !event->token_ids.empty()) first = absl::Now() - start;
      if (event->final && !event->status.ok()) return event->status;
    }
  }
  if (!first) return absl::InternalError("the request ended without a token");
  return *first;
}

scheduler::Request Question(std::vector<int32_t> prompt) {
  scheduler::Request request;
  request.prompt = std::move(prompt);
  request.sampling.temperature = 0.0f;
  request.max_tokens = 1;
  request.ignore_eos = true;
  return request;
}

struct Compressed {
  cache_store::DocumentPayload payload;
  int64_t work_tokens = 0;
  absl::Duration time;
};

// Compresses the document at ratio 1 with `method` and steps until the result is ready.
absl::StatusOr<Compressed> Compress(scheduler::Scheduler& scheduler,
                                    const engine::ModelConfig& config,
                                    const cache_store::DocumentInput& input,
                                    const cache_store::DocumentPrompts& prompts,
                                    cache_store::CompressionMethod method) {
  auto compressor = cache_store::DocumentCompressor::Create(
      config, input, prompts, /*query_tokens=*/{}, {.method = method, .ratio = 1.0});
  if (!compressor.ok()) return compressor.status();
  Compressed compressed;
  compressed.work_tokens = (*compressor)->total_tokens();
  const absl::Time start = absl::Now();
  auto handle = scheduler.SubmitCompression(*std::move(compressor));
  if (!handle.ok()) return handle.status();
  for (;;) {
    if (auto result = handle->TakeResult(absl::ZeroDuration())) {
      compressed.time = absl::Now() - start;
      if (!result->ok()) return result->status();
      compressed.payload = **std::move(result);
      return compressed;
    }
    if (!scheduler.HasWork()) return absl::InternalError("the compression ended without a result");
    auto report = scheduler.Step();
    if (!report.ok()) return report.status();
  }
}

absl::Status Validate(const engine::ModelConfig& config, const DocumentBenchOptions& options) {
  if (options.document_tokens < 1 || options.prefix_tokens < 0 || options.question_tokens < 1) {
    return absl::InvalidArgumentError(
        "the document and the question need tokens; the prefix cannot be negative");
  }
  for (double ratio : options.ratios) {
    if (!(ratio > 0.0 && ratio <= 1.0)) {
      return absl::InvalidArgumentError(absl::StrCat("kept ratio ", ratio, " is not in (0, 1]"));
    }
  }
  const int64_t scratch =
      int64_t{options.prefix_tokens} + options.document_tokens + options.question_tokens + 1;
  if (scratch > config.max_position_embeddings) {
    return absl::InvalidArgumentError(absl::StrCat("the prefix, document and question take ",
                                                   scratch, " positions; the model has ",
                                                   config.max_position_embeddings));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DocumentBenchResult> MeasureDocuments(engine::Model& model,
                                                     const DocumentBenchOptions& options) {
  const engine::ModelConfig& config = model.config();
  if (auto status = Validate(config, options); !status.ok()) return status;

  // The KV cache holds several documents' worth: the compression's document cache beside its
  // largest scoring chunk, and stored caches at several ratios resident at once.
  scheduler::SchedulerConfig scheduler_config;
  scheduler_config.max_num_batched_tokens = options.max_num_batched_tokens;
  const int64_t tokens_per_head = 4 * (int64_t{options.prefix_tokens} + options.document_tokens +
                                       options.chunk_tokens + options.question_tokens + 64);
  const int64_t blocks = (tokens_per_head + scheduler_config.block_size - 1) /
                         scheduler_config.block_size * config.num_layers * config.num_kv_heads;
  scheduler_config.kv_cache_bytes =
      static_cast<size_t>(blocks) *
      engine::KvBlockPool::BlockBytes(scheduler_config.block_size, config.head_dim,
                                      scheduler_config.kv_cache_dtype);
  auto created = scheduler::Scheduler::Create(model, /*tokenizer=*/nullptr, scheduler_config);
  if (!created.ok()) return created.status();
  scheduler::Scheduler& scheduler = **created;

  RandomTokens random(options.seed, config.vocab_size);
  cache_store::DocumentInput input;
  input.prefix_ids = random.Take(options.prefix_tokens);
  input.document_ids = random.Take(options.document_tokens);
  // Random pieces as long as the published prompts' tokens: they only shape the work.
  cache_store::DocumentPrompts prompts;
  prompts.chunk_tokens = options.chunk_tokens;
  prompts.repeat_all = random.Take(8);
  prompts.repeat_from = random.Take(14);
  prompts.answer_prefix = random.Take(5);

  DocumentBenchResult result;
  result.prefix_tokens = options.prefix_tokens;
  result.document_tokens = options.document_tokens;
  result.question_tokens = options.question_tokens;

  // Warm-up: first-use costs (allocations, thread start) stay out of the figures.
  if (auto warm_up = TimeToFirstToken(scheduler, Question(random.Take(64))); !warm_up.ok()) {
    return warm_up.status();
  }

  std::vector<int32_t> scratch = input.prefix_ids;
  scratch.insert(scratch.end(), input.document_ids.begin(), input.document_ids.end());
  const std::vector<int32_t> question = random.Take(options.question_tokens);
  scratch.insert(scratch.end(), question.begin(), question.end());
  auto scratch_ttft = TimeToFirstToken(scheduler, Question(std::move(scratch)));
  if (!scratch_ttft.ok()) return scratch_ttft.status();
  result.scratch_ttft_ms = Milliseconds(*scratch_ttft);

  auto prefill = Compress(scheduler, config, input, prompts, cache_store::CompressionMethod::kNone);
  if (!prefill.ok()) return prefill.status();
  result.prefill_work_tokens = prefill->work_tokens;
  result.prefill_seconds = absl::ToDoubleSeconds(prefill->time);

  auto kvzip = Compress(scheduler, config, input, prompts, cache_store::CompressionMethod::kKvzip);
  if (!kvzip.ok()) return kvzip.status();
  result.kvzip_work_tokens = kvzip->work_tokens;
  result.kvzip_seconds = absl::ToDoubleSeconds(kvzip->time);

  const int64_t entries_per_token = int64_t{config.num_layers} * config.num_kv_heads;
  const int32_t document_tokens = cache_store::DocumentTokens(kvzip->payload);
  for (size_t i = 0; i < options.ratios.size(); ++i) {
    DocumentRatioResult row;
    row.ratio = options.ratios[i];
    const int64_t keep = std::llround(row.ratio * document_tokens * entries_per_token);
    auto cut =
        cache_store::CutPayload(kvzip->payload, cache_store::CompressionMethod::kKvzip, keep);
    if (!cut.ok()) return cut.status();
    row.kept_entries = cache_store::DocumentEntries(*cut);
    auto bytes = cache_store::EncodePayload(*cut);
    if (!bytes.ok()) return bytes.status();
    row.stored_bytes = bytes->size();

    const scheduler::DocumentPrefix document{
        .key = absl::StrCat("bench-document-", i),
        .payload = std::make_shared<const cache_store::DocumentPayload>(*std::move(cut))};
    scheduler::Request cold = Question(random.Take(options.question_tokens));
    cold.document = document;
    auto cold_ttft = TimeToFirstToken(scheduler, std::move(cold));
    if (!cold_ttft.ok()) return cold_ttft.status();
    row.cold_ttft_ms = Milliseconds(*cold_ttft);

    scheduler::Request warm = Question(random.Take(options.question_tokens));
    warm.document = document;
    auto warm_ttft = TimeToFirstToken(scheduler, std::move(warm));
    if (!warm_ttft.ok()) return warm_ttft.status();
    row.warm_ttft_ms = Milliseconds(*warm_ttft);
    result.ratios.push_back(row);
  }
  return result;
}

}  // namespace kvd::bench
