#include "bench/keepkv_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cache_store/keepkv/keepkv_sequence.h"
#include "engine/kv_cache.h"
#include "engine/sampling.h"
#include "scheduler/scheduler.h"

namespace kvd::bench {
namespace {

using cache_store::KeepKvParams;
using cache_store::KeepKvSequence;
using cache_store::MergeMethod;

// What a user turn opens with; the model was trained to write documents after it.
constexpr std::string_view kUserTurn =
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n";

// A pool for the sequences the perturbation runs hold at once.
absl::StatusOr<std::unique_ptr<engine::KvBlockPool>> NewPool(engine::Model& model, int32_t tokens) {
  const engine::ModelConfig& config = model.config();
  const int32_t block_size = 16;
  const int32_t blocks =
      3 * ((tokens + block_size) / block_size + 2) * config.num_layers * config.num_kv_heads;
  return engine::KvBlockPool::Create(
      model.backend(),
      {.num_blocks = blocks, .block_size = block_size, .head_dim = config.head_dim});
}

// One step of `tokens` over `kv`, with KeepKV's bookkeeping when `keepkv` is set; the logits
// of the last token.
absl::StatusOr<std::vector<float>> Run(engine::Model& model, engine::KvBlockPool& pool,
                                       engine::SequenceKv& kv, std::span<const int32_t> tokens,
                                       KeepKvSequence* keepkv,
                                       cache_store::KeepKvCounts* counts = nullptr) {
  if (keepkv != nullptr && keepkv->RefreshDue()) {
    if (absl::Status s = keepkv->Refresh(kv, pool); !s.ok()) return s;
    if (counts != nullptr) ++counts->refreshes;
  }
  const int32_t n = static_cast<int32_t>(tokens.size());
  engine::StepScores scores;
  const bool scored = keepkv != nullptr && keepkv->PrepareScores(kv, n, true, scores);
  if (absl::Status s = kv.Reserve(pool, n); !s.ok()) return s;
  engine::StepLogits logits;
  const engine::SequenceStep step{&kv, tokens, engine::LogitRows::kLast,
                                  scored ? &scores : nullptr};
  if (absl::Status s = model.Forward({&step, 1}, pool, logits); !s.ok()) return s;
  if (keepkv != nullptr) {
    auto done = keepkv->AfterStep(kv, pool, n, true, scored ? &scores : nullptr);
    if (!done.ok()) return done.status();
    if (counts != nullptr) {
      counts->merges += done->merges;
      counts->evictions += done->evictions;
      counts->fallbacks += done->fallbacks;
    }
  }
  const std::span<const float> row = logits.row(0);
  return std::vector<float>(row.begin(), row.end());
}

// A prompt the model writes itself after a user turn's header, sampled at temperature 1 with
// the end-of-turn tokens banned.
absl::StatusOr<std::vector<int32_t>> SamplePrompt(engine::Model& model,
                                                  const text::Tokenizer& tokenizer,
                                                  engine::KvBlockPool& pool, int32_t length,
                                                  uint64_t seed) {
  std::vector<int32_t> tokens = tokenizer.Encode(kUserTurn, /*add_special_tokens=*/false);
  engine::SamplingParams params;
  params.seed = seed;
  engine::Sampler sampler(params, seed);
  std::vector<int32_t> banned = model.config().eos_token_ids;
  engine::SequenceKv kv(model.config().num_layers, model.config().num_kv_heads);
  absl::StatusOr<std::vector<float>> logits = Run(model, pool, kv, tokens, nullptr);
  while (logits.ok() && std::ssize(tokens) < length) {
    const int32_t next = sampler.Sample(*logits, tokens, 0, banned).token;
    tokens.push_back(next);
    logits = Run(model, pool, kv, {&tokens.back(), 1}, nullptr);
  }
  kv.Release(pool);
  if (!logits.ok()) return logits.status();
  return tokens;
}

struct Reference {
  std::vector<int32_t> continuation;       // greedy, from the full cache
  std::vector<std::vector<float>> logits;  // after each continuation token
};

absl::StatusOr<Reference> FullCacheRun(engine::Model& model, engine::KvBlockPool& pool,
                                       const std::vector<int32_t>& prompt, int32_t steps) {
  Reference reference;
  engine::SequenceKv kv(model.config().num_layers, model.config().num_kv_heads);
  absl::StatusOr<std::vector<float>> logits = Run(model, pool, kv, prompt, nullptr);
  for (int32_t t = 0; logits.ok() && t < steps; ++t) {
    const auto top = std::max_element(logits->begin(), logits->end());
    reference.continuation.push_back(static_cast<int32_t>(top - logits->begin()));
    logits = Run(model, pool, kv, {&reference.continuation.back(), 1}, nullptr);
    if (logits.ok()) reference.logits.push_back(*logits);
  }
  kv.Release(pool);
  if (!logits.ok()) return logits.status();
  return reference;
}

double RelativeChange(const std::vector<float>& after, const std::vector<float>& before) {
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < before.size(); ++i) {
    diff += (double{after[i]} - before[i]) * (double{after[i]} - before[i]);
    norm += double{before[i]} * before[i];
  }
  return std::sqrt(diff / norm);
}

std::vector<double> LogSoftmax(const std::vector<float>& logits) {
  const double hi = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float l : logits) sum += std::exp(l - hi);
  std::vector<double> out(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = logits[i] - hi - std::log(sum);
  return out;
}

double KlDivergence(const std::vector<float>& full, const std::vector<float>& bounded) {
  const std::vector<double> p = LogSoftmax(full), q = LogSoftmax(bounded);
  double kl = 0.0;
  for (size_t i = 0; i < p.size(); ++i) kl += std::exp(p[i]) * (p[i] - q[i]);
  return kl;
}

// The bounded run of one prompt: the compaction after the prompt, then the reference's
// continuation teacher-forced, compared step by step.
absl::StatusOr<Perturbation> BoundedRun(engine::Model& model, engine::KvBlockPool& pool,
                                        const std::vector<int32_t>& prompt,
                                        const Reference& reference, const KeepKvParams& params) {
  KeepKvSequence keepkv(model.config(), params, params.Budget(static_cast<int32_t>(prompt.size())));
  engine::SequenceKv kv(model.config().num_layers, model.config().num_kv_heads);
  cache_store::KeepKvCounts counts;
  Perturbation result;
  absl::Status status = Run(model, pool, kv, prompt, &keepkv, &counts).status();
  const size_t steps = reference.logits.size();
  for (size_t t = 0; status.ok() && t < steps; ++t) {
    absl::StatusOr<std::vector<float>> logits =
        Run(model, pool, kv, {&reference.continuation[t], 1}, &keepkv, &counts);
    if (!logits.ok()) {
      status = logits.status();
      break;
    }
    const double change = RelativeChange(*logits, reference.logits[t]);
    if (t == 0) result.first_step = change;
    result.mean += change / steps;
    if (t >= steps - steps / 4) result.last_quarter += change / (steps / 4);
    result.kl += KlDivergence(reference.logits[t], *logits) / steps;
    const auto top = std::max_element(logits->begin(), logits->end()) - logits->begin();
    const auto expected = t + 1 < steps
                              ? reference.continuation[t + 1]
                              : static_cast<int32_t>(std::max_element(reference.logits[t].begin(),
                                                                      reference.logits[t].end()) -
                                                     reference.logits[t].begin());
    result.top1_agreement += (top == expected ? 1.0 : 0.0) / steps;
  }
  kv.Release(pool);
  if (!status.ok()) return status;
  result.merges = counts.merges;
  result.evictions = counts.evictions;
  result.fallbacks = counts.fallbacks;
  return result;
}

// Perturbation averaged over the prompts.
absl::StatusOr<Perturbation> Average(engine::Model& model, engine::KvBlockPool& pool,
                                     const std::vector<std::vector<int32_t>>& prompts,
                                     const std::vector<Reference>& references,
                                     const KeepKvParams& params) {
  Perturbation sum;
  for (size_t i = 0; i < prompts.size(); ++i) {
    absl::StatusOr<Perturbation> one = BoundedRun(model, pool, prompts[i], references[i], params);
    if (!one.ok()) return one.status();
    const double share = 1.0 / prompts.size();
    sum.first_step += one->first_step * share;
    sum.mean += one->mean * share;
    sum.last_quarter += one->last_quarter * share;
    sum.kl += one->kl * share;
    sum.top1_agreement += one->top1_agreement * share;
    sum.merges += one->merges;
    sum.evictions += one->evictions;
    sum.fallbacks += one->fallbacks;
  }
  return sum;
}

// The one-at-a-time variations of the default parameters the sweep measures.
std::vector<std::pair<std::string, KeepKvParams>> SweepVariants(const KeepKvParams& base) {
  std::vector<std::pair<std::string, KeepKvParams>> variants = {{"defaults", base}};
  auto add = [&](std::string label, auto change) {
    KeepKvParams params = base;
    change(params);
    variants.emplace_back(std::move(label), params);
  };
  add("similar pairs",
      [](KeepKvParams& p) { p.selection = cache_store::MergeSelection::kSimilarPairs; });
  add("lowest scores",
      [](KeepKvParams& p) { p.selection = cache_store::MergeSelection::kLowestScores; });
  for (double alpha : {0.0, 0.5, 0.99}) {
    add(absl::StrCat("alpha ", alpha), [&](KeepKvParams& p) { p.alpha = alpha; });
  }
  for (int32_t window : {1, 4, 8, 32}) {
    add(absl::StrCat("window ", window), [&](KeepKvParams& p) { p.window = window; });
  }
  for (int32_t pool : {1, 3, 15}) {
    add(absl::StrCat("pool ", pool), [&](KeepKvParams& p) { p.pool = pool; });
  }
  for (int32_t recent : {0, 64}) {
    add(absl::StrCat("recent ", recent), [&](KeepKvParams& p) { p.recent = recent; });
  }
  // The similarity gates choose neighbours, which only lowest_scores folds into.
  for (float cosine : {0.3f, 0.65f, 0.8f, 0.9f}) {
    add(absl::StrCat("lowest scores, min_cosine ", cosine), [&](KeepKvParams& p) {
      p.selection = cache_store::MergeSelection::kLowestScores;
      p.min_cosine = cosine;
    });
  }
  for (float cosine : {0.5f, 0.8f, 0.9f}) {
    add(absl::StrCat("lowest scores, min_value_cosine ", cosine), [&](KeepKvParams& p) {
      p.selection = cache_store::MergeSelection::kLowestScores;
      p.min_value_cosine = cosine;
    });
  }
  for (int32_t every : {8, 16}) {
    add(absl::StrCat("refresh_every ", every), [&](KeepKvParams& p) { p.refresh_every = every; });
  }
  return variants;
}

}  // namespace

absl::StatusOr<KeepKvBenchResult> MeasureKeepKv(engine::Model& model,
                                                const text::Tokenizer& tokenizer,
                                                const KeepKvBenchOptions& options) {
  if (options.prompts < 1 || options.follow_steps < 4 || options.prompt_tokens < 64) {
    return absl::InvalidArgumentError(
        "keepkv bench: at least 1 prompt, 4 follow steps and 64 prompt tokens");
  }
  auto pool = NewPool(model, options.prompt_tokens + options.follow_steps);
  if (!pool.ok()) return pool.status();
  std::vector<std::vector<int32_t>> prompts;
  std::vector<Reference> references;
  for (int32_t i = 0; i < options.prompts; ++i) {
    auto prompt = SamplePrompt(model, tokenizer, **pool, options.prompt_tokens, options.seed + i);
    if (!prompt.ok()) return prompt.status();
    auto reference = FullCacheRun(model, **pool, *prompt, options.follow_steps);
    if (!reference.ok()) return reference.status();
    prompts.push_back(*std::move(prompt));
    references.push_back(*std::move(reference));
  }

  KeepKvBenchResult result;
  for (double budget : options.budgets) {
    for (MergeMethod method :
         {MergeMethod::kGqaFit, MergeMethod::kGroupMean, MergeMethod::kWeightedMean,
          MergeMethod::kConvex, MergeMethod::kEvict}) {
      KeepKvParams params;
      params.budget.fraction = budget;
      params.method = method;
      auto row = Average(model, **pool, prompts, references, params);
      if (!row.ok()) return row.status();
      result.methods.push_back({std::string(cache_store::MergeMethodName(method)), budget, *row});
    }
  }
  for (double budget : {0.2, 0.1}) {
    KeepKvParams base;
    base.budget.fraction = budget;
    for (const auto& [label, params] : SweepVariants(base)) {
      auto row = Average(model, **pool, prompts, references, params);
      if (!row.ok()) return row.status();
      result.sweep.push_back({label, params.budget.fraction, *row});
    }
  }
  for (bool keepkv : {false, true}) {
    auto batch = MeasureKeepKvBatch(model, &tokenizer, options, keepkv);
    if (!batch.ok()) return batch.status();
    result.batch.push_back(*batch);
  }
  return result;
}

absl::StatusOr<BatchResult> MeasureKeepKvBatch(engine::Model& model,
                                               const text::Tokenizer* tokenizer,
                                               const KeepKvBenchOptions& options, bool keepkv) {
  scheduler::SchedulerConfig config;
  config.max_num_seqs = options.batch_sequences;
  config.max_num_batched_tokens = 4096;
  config.kv_cache_bytes = options.batch_kv_cache_bytes;
  auto created = scheduler::Scheduler::Create(model, tokenizer, config);
  if (!created.ok()) return created.status();
  scheduler::Scheduler& engine = **created;
  std::mt19937 random(static_cast<uint32_t>(options.seed));
  std::uniform_int_distribution<int32_t> byte('a', 'z');
  std::vector<scheduler::RequestHandle> handles;
  for (int32_t i = 0; i < options.batch_sequences; ++i) {
    scheduler::Request request;
    if (tokenizer != nullptr) request.prompt = tokenizer->Encode(kUserTurn, false);
    while (std::ssize(request.prompt) < options.batch_prompt_tokens) {
      request.prompt.push_back(byte(random));
    }
    request.sampling.temperature = 0.0f;
    request.max_tokens = options.batch_decode_tokens;
    request.ignore_eos = true;
    if (keepkv) {
      KeepKvParams params;
      params.budget.fraction = 0.1;
      request.keepkv = params;
    }
    auto handle = engine.Submit(request);
    if (!handle.ok()) return handle.status();
    handles.push_back(*std::move(handle));
  }
  BatchResult result;
  result.keepkv = keepkv;
  int64_t decode_tokens = 0;
  double decode_seconds = 0.0;
  while (engine.HasWork()) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<scheduler::StepReport> report = engine.Step();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!report.ok()) return report.status();
    const scheduler::MetricsSnapshot metrics = engine.Metrics();
    result.peak_kv_blocks =
        std::max(result.peak_kv_blocks, metrics.kv_blocks_total - metrics.kv_blocks_free);
    if (metrics.keepkv_sequences > 0 && report->num_prefill_tokens > 0) {
      result.compressed_fraction = metrics.keepkv_compressed_fraction;
    }
    if (report->num_prefill_tokens == 0 && report->num_decode_tokens > 0) {
      decode_tokens += report->num_decode_tokens;
      decode_seconds += seconds;
    }
    for (auto& handle : handles) {
      while (auto event = handle.Next(absl::ZeroDuration())) {
        if (event->final && !event->status.ok()) return event->status;
      }
    }
  }
  result.decode_tokens_per_second = decode_seconds > 0 ? decode_tokens / decode_seconds : 0.0;
  return result;
}

}  // namespace kvd::bench
