#include "bench/speculative_bench.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/statistics.h"
#include "cache_store/kvzip/document_compressor.h"
#include "scheduler/scheduler.h"

namespace kvd::bench {
namespace {

// Greedy, or sampled at the options' temperature with the request's index as its seed.
scheduler::Request NewRequest(std::vector<int32_t> prompt, const SpeculativeBenchOptions& options,
                              size_t index) {
  scheduler::Request request;
  request.prompt = std::move(prompt);
  request.sampling.temperature = options.temperature;
  if (options.temperature > 0.0f) request.sampling.seed = index;
  request.max_tokens = options.max_tokens;
  return request;
}

// Each document's cache computed once, whole, with its token ids (as an upload stores them),
// and a request for each of its questions.
absl::StatusOr<std::vector<scheduler::Request>> DocumentQuestions(
    engine::Model& model, const SpeculativeBenchOptions& options) {
  const cache_store::DocumentPipeline& pipeline = options.pipeline;
  if (pipeline.framing == nullptr || pipeline.tokenizer == nullptr || options.prompts == nullptr) {
    return absl::InvalidArgumentError("documents need their framing, tokenizer and prompts");
  }
  absl::StatusOr<std::unique_ptr<scheduler::Scheduler>> scheduler =
      scheduler::Scheduler::Create(model, pipeline.tokenizer, scheduler::SchedulerConfig{});
  if (!scheduler.ok()) return scheduler.status();
  std::vector<scheduler::Request> requests;
  for (size_t d = 0; d < options.documents.size(); ++d) {
    const SpeculativeQuestions& document = options.documents[d];
    absl::StatusOr<cache_store::DocumentInput> input =
        cache_store::PrepareDocument(pipeline, document.document);
    if (!input.ok()) return input.status();
    auto compressor = cache_store::DocumentCompressor::Create(
        model.config(), *std::move(input), *options.prompts, {},
        {.method = cache_store::CompressionMethod::kNone});
    if (!compressor.ok()) return compressor.status();
    auto handle = (*scheduler)->SubmitCompression(*std::move(compressor));
    if (!handle.ok()) return handle.status();
    while ((*scheduler)->HasWork()) {
      if (auto step = (*scheduler)->Step(); !step.ok()) return step.status();
    }
    auto result = handle->TakeResult(absl::ZeroDuration());
    if (!result) return absl::InternalError("a document's compression ended without a result");
    if (!result->ok()) return result->status();
    auto payload = std::make_shared<const cache_store::DocumentPayload>(**std::move(result));
    for (const std::string& question : document.questions) {
      std::vector<int32_t> prompt =
          pipeline.framing->kind == cache_store::FramingKind::kChat
              ? cache_store::QuestionTokens(*pipeline.tokenizer, *options.prompts, question)
              : pipeline.tokenizer->Encode(question, /*add_special_tokens=*/false);
      scheduler::Request request = NewRequest(std::move(prompt), options, requests.size());
      request.stop = options.stop;
      request.document = scheduler::DocumentPrefix{absl::StrCat("bench/", d), payload};
      requests.push_back(std::move(request));
    }
  }
  return requests;
}

std::vector<scheduler::Request> RandomPrompts(const engine::Model& model,
                                              const SpeculativeBenchOptions& options) {
  std::mt19937_64 random(options.seed);
  const int32_t vocab = options.prompt_vocab > 0
                            ? std::min(options.prompt_vocab, model.config().vocab_size)
                            : model.config().vocab_size;
  std::uniform_int_distribution<int32_t> ids(0, vocab - 1);
  std::vector<scheduler::Request> requests;
  for (int32_t i = 0; i < options.random_requests; ++i) {
    std::vector<int32_t> prompt(static_cast<size_t>(options.prompt_tokens));
    for (int32_t& id : prompt) id = ids(random);
    scheduler::Request request = NewRequest(std::move(prompt), options, requests.size());
    request.ignore_eos = true;
    requests.push_back(std::move(request));
  }
  return requests;
}

struct ServedRound {
  double decode_tokens_per_second = 0.0;
  double tokens_per_second = 0.0;
  int64_t tokens = 0;
  int64_t steps = 0;
  uint64_t drafted = 0;
  uint64_t accepted = 0;
  std::vector<std::vector<int32_t>> outputs;  // per request
};

// Serves `requests` with `batch` in flight at a time (a finished one's place taken at once) on a
// scheduler of its own, stepped on this thread.
absl::StatusOr<ServedRound> Serve(engine::Model& model, const text::Tokenizer* tokenizer,
                                  const scheduler::SchedulerConfig& config,
                                  const std::vector<scheduler::Request>& requests, int32_t batch) {
  absl::StatusOr<std::unique_ptr<scheduler::Scheduler>> scheduler =
      scheduler::Scheduler::Create(model, tokenizer, config);
  if (!scheduler.ok()) return scheduler.status();
  ServedRound round;
  round.outputs.resize(requests.size());
  std::vector<std::optional<absl::Time>> first(requests.size()), last(requests.size());
  std::vector<std::pair<size_t, scheduler::RequestHandle>> in_flight;
  size_t next = 0;
  const absl::Time start = absl::Now();
  while (next < requests.size() || !in_flight.empty()) {
    while (std::ssize(in_flight) < batch && next < requests.size()) {
      auto handle = (*scheduler)->Submit(requests[next]);
      if (!handle.ok()) return handle.status();
      in_flight.emplace_back(next++, *std::move(handle));
    }
    if (auto step = (*scheduler)->Step(); !step.ok()) return step.status();
    const absl::Time now = absl::Now();
    for (auto it = in_flight.begin(); it != in_flight.end();) {
      const size_t index = it->first;
      bool ended = false;
      while (auto event = it->second.Next(absl::ZeroDuration())) {
        if (event->final) {
          if (!event->status.ok()) return event->status;
          ended = true;
          continue;
        }
        if (event->token_ids.empty()) continue;
        if (!first[index]) first[index] = now;
        last[index] = now;
        round.outputs[index].insert(round.outputs[index].end(), event->token_ids.begin(),
                                    event->token_ids.end());
      }
      it = ended ? in_flight.erase(it) : it + 1;
    }
  }
  const double wall = absl::ToDoubleSeconds(absl::Now() - start);
  int64_t decode_tokens = 0;
  double decode_seconds = 0.0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const int64_t tokens = std::ssize(round.outputs[i]);
    round.tokens += tokens;
    if (tokens < 2) continue;
    decode_tokens += tokens - 1;
    decode_seconds += absl::ToDoubleSeconds(*last[i] - *first[i]);
  }
  round.decode_tokens_per_second = decode_seconds > 0 ? decode_tokens / decode_seconds : 0.0;
  round.tokens_per_second = wall > 0 ? round.tokens / wall : 0.0;
  const scheduler::MetricsSnapshot metrics = (*scheduler)->Metrics();
  round.steps = static_cast<int64_t>(metrics.steps);
  round.drafted = metrics.spec_decode_draft_tokens;
  round.accepted = metrics.spec_decode_accepted_tokens;
  return round;
}

}  // namespace

absl::StatusOr<std::vector<SpeculativeBenchResult>> MeasureSpeculativeDecoding(
    engine::Model& model, const SpeculativeBenchOptions& options) {
  absl::StatusOr<std::vector<scheduler::Request>> requests =
      options.documents.empty() ? RandomPrompts(model, options) : DocumentQuestions(model, options);
  if (!requests.ok()) return requests.status();
  scheduler::SchedulerConfig plain;
  plain.max_num_seqs = std::max(plain.max_num_seqs, *std::max_element(options.batch_sizes.begin(),
                                                                      options.batch_sizes.end()));
  scheduler::SchedulerConfig speculative = plain;
  speculative.speculative = options.speculative;
  std::vector<SpeculativeBenchResult> results;
  for (int32_t batch : options.batch_sizes) {
    std::vector<ServedRound> rounds[2];
    // Interleaved: without drafts, then with, every round, so that drift hits both alike.
    for (int32_t r = 0; r < options.rounds; ++r) {
      for (int mode = 0; mode < 2; ++mode) {
        absl::StatusOr<ServedRound> round = Serve(
            model, options.pipeline.tokenizer, mode == 0 ? plain : speculative, *requests, batch);
        if (!round.ok()) return round.status();
        rounds[mode].push_back(*std::move(round));
      }
    }
    for (int mode = 0; mode < 2; ++mode) {
      SpeculativeBenchResult result{.batch = batch, .speculative = mode == 1};
      std::vector<double> tokens_per_second;
      uint64_t drafted = 0, accepted = 0;
      for (size_t r = 0; r < rounds[mode].size(); ++r) {
        const ServedRound& round = rounds[mode][r];
        result.decode_rounds.push_back(round.decode_tokens_per_second);
        tokens_per_second.push_back(round.tokens_per_second);
        drafted += round.drafted;
        accepted += round.accepted;
        result.same_tokens = result.same_tokens && round.outputs == rounds[0][r].outputs;
      }
      result.decode_tokens_per_second = Median(result.decode_rounds);
      result.tokens_per_second = Median(tokens_per_second);
      result.tokens = rounds[mode].front().tokens;
      result.steps = rounds[mode].front().steps;
      result.draft_tokens = static_cast<int64_t>(rounds[mode].front().drafted);
      result.accepted_fraction = drafted > 0 ? static_cast<double>(accepted) / drafted : 0.0;
      results.push_back(std::move(result));
    }
  }
  return results;
}

}  // namespace kvd::bench
