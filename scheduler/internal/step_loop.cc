#include "scheduler/internal/step_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "scheduler/internal/prompt_logprobs.h"

namespace kvd::scheduler::internal {
namespace {

// End-of-sequence ids (unless ignored) and the request's stop ids.
std::vector<int32_t> StopTokens(const Request& request, const engine::ModelConfig& config) {
  std::vector<int32_t> stops = request.stop_token_ids;
  if (!request.ignore_eos) {
    stops.insert(stops.end(), config.eos_token_ids.begin(), config.eos_token_ids.end());
  }
  return stops;
}

double Seconds(absl::Duration duration) { return absl::ToDoubleSeconds(duration); }

// The root of a request's prefix chains: its tenant's salt (or its group's) and its own.
PrefixBlockKey PrefixRoot(const Request& request) {
  const std::string& group = request.tenant.prefix_cache_salt;
  const std::string& owner = group.empty() ? request.tenant.id : group;
  return PrefixCache::Root(absl::StrCat(group.empty() ? "tenant:" : "group:", owner.size(), ":",
                                        owner, "/", request.cache_salt));
}

std::unique_ptr<PrefixCache> NewPrefixCache(const SchedulerConfig& config,
                                            const engine::ModelConfig& model,
                                            engine::KvBlockPool& pool,
                                            std::vector<KvEvent>* events) {
  if (!config.prefix_cache.enabled) return nullptr;
  return std::make_unique<PrefixCache>(
      pool, model.num_layers, model.num_kv_heads,
      static_cast<int64_t>(config.prefix_cache.max_pool_fraction * pool.num_blocks()), events);
}

}  // namespace

StepLoop::StepLoop(engine::Model& model, engine::Model* draft_model,
                   std::unique_ptr<engine::KvBlockPool> pool, const text::Tokenizer* tokenizer,
                   const SchedulerConfig& config, const Clock& clock, SchedulerMetrics& metrics,
                   KvEventLog* kv_events, std::function<void(const RequestState&)> on_dequeued,
                   std::function<void()> wake)
    : model_(model),
      draft_model_(draft_model),
      pool_(std::move(pool)),
      tokenizer_(tokenizer),
      config_(config),
      clock_(clock),
      metrics_(metrics),
      on_dequeued_(std::move(on_dequeued)),
      watermark_blocks_(
          static_cast<int32_t>(std::ceil(config.admission_watermark * pool_->num_blocks()))),
      seeds_(std::random_device{}()),
      documents_(model.config(), *pool_),
      kv_events_(kv_events),
      prefix_cache_(NewPrefixCache(config, model.config(), *pool_,
                                   kv_events != nullptr ? &step_events_ : nullptr)),
      jobs_(*pool_),
      constraint_workers_(config.constraint_threads, std::move(wake)) {
  PublishGauges();
}

std::unique_ptr<engine::SequenceKv> StepLoop::NewKv() const {
  const engine::ModelConfig& config = model_.config();
  return std::make_unique<engine::SequenceKv>(config.num_layers, config.num_kv_heads);
}

std::unique_ptr<engine::Sampler> StepLoop::NewSampler(const Request& request, int32_t choice) {
  engine::SamplingParams params = request.sampling;
  // Completions of one seeded request differ from each other and are reproducible.
  if (params.seed) params.seed = *params.seed + static_cast<uint64_t>(choice);
  return std::make_unique<engine::Sampler>(std::move(params), seeds_());
}

std::shared_ptr<ConstrainedOutput> StepLoop::NewConstrained(const Request& request) {
  if (request.constraint == nullptr) return nullptr;
  auto constrained = std::make_shared<ConstrainedOutput>(request.constraint);
  constraint_workers_.Start(request.tenant.id, constrained, std::nullopt, request.max_tokens);
  return constrained;
}

bool StepLoop::HasWork() const {
  if (waiting_.size() > 0 || !jobs_.empty()) return true;
  return std::any_of(running_.begin(), running_.end(), [](const auto& sequence) {
    return !sequence->awaits_mask() || sequence->constrained->ready() ||
           sequence->request->channel->cancelled();
  });
}

std::unique_ptr<SequenceOutput> StepLoop::NewOutput(const Request& request, int32_t choice) const {
  return std::make_unique<SequenceOutput>(request, choice, StopTokens(request, model_.config()),
                                          tokenizer_);
}

std::unique_ptr<cache_store::KeepKvSequence> StepLoop::NewKeepKv(const Request& request,
                                                                 int32_t shared_tokens) const {
  if (!request.keepkv) return nullptr;
  // A shared prefix is protected as a document is: its entries are not the sequence's own, so
  // they count neither against the budget nor as the protected prefix they already cover.
  cache_store::KeepKvParams params = *request.keepkv;
  params.protected_prefix = std::max(0, params.protected_prefix - shared_tokens);
  const int32_t own_prompt_tokens =
      std::max(1, static_cast<int32_t>(request.prompt.size()) - shared_tokens);
  return std::make_unique<cache_store::KeepKvSequence>(model_.config(), params,
                                                       params.Budget(own_prompt_tokens));
}

void StepLoop::Add(std::shared_ptr<RequestState> request) {
  auto sequence = std::make_unique<Sequence>();
  const Request& r = request->request;
  request->open_choices = r.n;
  sequence->request = request;
  sequence->pending_forks = r.n - 1;
  sequence->kv = NewKv();
  sequence->sampler = NewSampler(r, 0);
  sequence->output = NewOutput(r, 0);
  sequence->constrained = NewConstrained(r);
  if (r.constraint != nullptr) metrics_.RecordConstrainedRequest();
  sequence->keepkv = NewKeepKv(r);
  // A scored prompt computes every position itself: it attaches no cached prefix.
  if (prefix_cache_ != nullptr && !r.document && !r.prompt_logprobs) {
    sequence->prefix = PrefixChain{.root = PrefixRoot(r)};
  }
  if (r.prompt_logprobs) request->prompt_logprobs.resize(r.prompt.size() - 1);
  sequence->tokens = r.prompt;
  waiting_.Push(std::move(sequence));
}

void StepLoop::AddCompression(std::unique_ptr<cache_store::DocumentCompressor> compressor,
                              std::shared_ptr<CompressionChannel> channel) {
  jobs_.Add(std::move(compressor), std::move(channel));
}

absl::StatusOr<StepReport> StepLoop::Step() {
  const absl::Time start = clock_.Now();
  StepReport report;
  DropCancelled();
  jobs_.DropCancelled();
  SampleDeferred(start);
  RefreshKeepKv();
  int32_t budget = config_.max_num_batched_tokens;
  std::vector<Scheduled> scheduled;
  if (draft_model_ != nullptr) DraftWithModel(budget);
  ScheduleRunning(budget, scheduled, report);
  // Compressions are guaranteed a share after the running requests, so a stream of arrivals
  // cannot starve them (at most half of what is left while requests wait, so that uploads
  // never hold every question back), and take whatever the waiting requests leave.
  const int32_t compression_share =
      jobs_.empty() ? 0
                    : std::min({budget, config_.compression_tokens_per_step,
                                waiting_.size() > 0 ? (budget + 1) / 2 : budget});
  budget -= compression_share;
  // Admitting while evicting would only preempt again.
  if (report.preempted.empty()) AdmitWaiting(budget, scheduled, report);
  std::vector<engine::SequenceStep> compression;
  if (report.preempted.empty()) {
    const int64_t keep_free = running_.empty() ? 0 : watermark_blocks_;
    // Compressions reserve as they go: cached blocks nobody uses make way for their peak.
    if (!jobs_.empty()) FreeIdle(jobs_.NextBlocksWanted() + keep_free);
    report.num_compression_tokens = jobs_.Plan(
        budget + compression_share, keep_free,
        /*may_start=*/compressions_held_back_.use_count() == 1, clock_.Now(), compression);
  }
  absl::Status status = RunForward(scheduled, compression, report);
  if (const int32_t computed = report.num_prefill_tokens + report.num_decode_tokens;
      status.ok() && computed > 0) {
    const double per_token = Seconds(report.forward_time) / computed;
    seconds_per_token_ =
        seconds_per_token_ == 0.0 ? per_token : 0.9 * seconds_per_token_ + 0.1 * per_token;
  }
  if (status.ok()) {
    ProcessOutputs(scheduled, clock_.Now());
    jobs_.Commit(clock_.Now());
  } else {
    jobs_.FailPlanned(status);
  }

  if (kv_events_ != nullptr && !step_events_.empty()) {
    kv_events_->Append(absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()),
                       std::move(step_events_));
    step_events_.clear();
  }
  report.num_running = static_cast<int32_t>(running_.size());
  report.num_waiting = static_cast<int32_t>(waiting_.size());
  report.step_time = clock_.Now() - start;
  PublishGauges();
  metrics_.RecordStep(report.num_prefill_tokens + report.num_decode_tokens,
                      static_cast<int32_t>(report.preempted.size()), Seconds(report.step_time),
                      Seconds(report.forward_time));
  if (!status.ok()) return status;
  return report;
}

void StepLoop::DropCancelled() {
  std::vector<Sequence*> cancelled;
  for (const auto& sequence : running_) {
    if (sequence->request->channel->cancelled()) cancelled.push_back(sequence.get());
  }
  for (Sequence* sequence : cancelled) {
    Close(TakeRunning(sequence), FinishReason::kAbort, /*event_sent=*/false);
  }
  for (auto& sequence :
       waiting_.RemoveIf([](const Sequence& s) { return s.request->channel->cancelled(); })) {
    Close(std::move(sequence), FinishReason::kAbort, /*event_sent=*/false);
  }
}

void StepLoop::RefreshKeepKv() {
  int64_t refreshes = 0;
  for (const auto& sequence : running_) {
    if (sequence->keepkv == nullptr || !sequence->keepkv->RefreshDue()) continue;
    // A refresh the pool has no room for now is skipped until the next period.
    if (MakeRoom(sequence->keepkv->RefreshBlocks(*sequence->kv, *pool_)) &&
        sequence->keepkv->Refresh(*sequence->kv, *pool_).ok()) {
      ++refreshes;
    }
  }
  if (refreshes > 0) metrics_.RecordKeepKv(0, 0, refreshes);
}

absl::Status StepLoop::RunForward(std::span<Scheduled> scheduled,
                                  std::span<const engine::SequenceStep> compression,
                                  StepReport& report) {
  if (scheduled.empty() && compression.empty()) return absl::OkStatus();
  std::vector<engine::SequenceStep> steps;
  steps.reserve(scheduled.size() + compression.size());
  keepkv_scores_.resize(scheduled.size());
  for (size_t i = 0; i < scheduled.size(); ++i) {
    Scheduled& item = scheduled[i];
    Sequence& sequence = *item.sequence;
    const bool speculates = !sequence.speculated.empty();
    const bool completes =
        speculates || sequence.num_computed + item.count == std::ssize(sequence.tokens);
    if (sequence.keepkv != nullptr &&
        sequence.keepkv->PrepareScores(*sequence.kv, item.count, completes, keepkv_scores_[i])) {
      item.scores = &keepkv_scores_[i];
    }
    // Verified drafts need a row at every position, as a scored prompt does.
    const engine::LogitRows rows = ScoresPrompt(sequence) || speculates ? engine::LogitRows::kAll
                                   : completes                          ? engine::LogitRows::kLast
                                                                        : engine::LogitRows::kNone;
    const std::span<const int32_t> tokens =
        speculates
            ? std::span<const int32_t>(sequence.speculated)
            : std::span<const int32_t>(sequence.tokens).subspan(sequence.num_computed, item.count);
    steps.push_back({sequence.kv.get(), tokens, rows, item.scores});
    const bool decoding = sequence.generated > 0 && completes && (item.count == 1 || speculates);
    (decoding ? report.num_decode_tokens : report.num_prefill_tokens) += item.count;
  }
  // Compression parts ask for no logits, so the rows of the sequences' logits stay in order.
  steps.insert(steps.end(), compression.begin(), compression.end());
  report.num_sequences = static_cast<int32_t>(steps.size());
  const absl::Time start = clock_.Now();
  // Logits come back as each row's top logits, which decide most draws; a row is fetched
  // whole only for the draws they leave open. A step returns as many as its most demanding row
  // needs: a batch of greedy picks, one or a few.
  logits_request_.top_k = 1;
  logits_request_.inverse_temperatures.clear();
  for (const Scheduled& item : scheduled) {
    const Sequence& sequence = *item.sequence;
    const bool speculates = !sequence.speculated.empty();
    const bool completes =
        speculates || sequence.num_computed + item.count == std::ssize(sequence.tokens);
    if (ScoresPrompt(sequence)) {
      // The rows that score prompt tokens (all but a completing chunk's last), at temperature 1.
      logits_request_.top_k =
          std::max(logits_request_.top_k, *sequence.request->request.prompt_logprobs);
      logits_request_.inverse_temperatures.insert(logits_request_.inverse_temperatures.end(),
                                                  completes ? item.count - 1 : item.count, 1.0f);
    }
    if (!completes) continue;
    logits_request_.top_k = std::max(
        logits_request_.top_k,
        sequence.sampler->TopLogitsToDecide(sequence.output->Banned(sequence.generated).size(),
                                            sequence.constrained != nullptr));
    // Greedy rows take 1; a temperature so small its inverse overflows a float takes the
    // largest float (the draw is then a greedy pick either way).
    const double temperature = sequence.sampler->params().temperature;
    logits_request_.inverse_temperatures.insert(
        logits_request_.inverse_temperatures.end(), speculates ? item.count : 1,
        temperature > 0.0 ? static_cast<float>(std::min(1.0 / temperature,
                                                        double{std::numeric_limits<float>::max()}))
                          : 1.0f);
  }
  report.top_logits = logits_request_.inverse_temperatures.empty() ? 0 : logits_request_.top_k;
  whole_row_index_ = -1;
  absl::Status status = model_.Forward(steps, *pool_, logits_, logits_request_);
  report.forward_time = clock_.Now() - start;
  if (!status.ok()) {
    std::vector<std::shared_ptr<RequestState>> failed;
    for (const Scheduled& item : scheduled) failed.push_back(item.sequence->request);
    FailRequests(failed, status);
  }
  return status;
}

void StepLoop::ProcessOutputs(std::span<const Scheduled> scheduled, absl::Time now) {
  int32_t row = 0;
  std::vector<std::shared_ptr<RequestState>> failed;
  absl::Status error;
  for (const Scheduled& item : scheduled) {
    Sequence& sequence = *item.sequence;
    if (!sequence.speculated.empty()) {
      const int32_t first_row = row;
      row += item.count;
      if (std::find(failed.begin(), failed.end(), sequence.request) != failed.end()) continue;
      if (absl::Status verified = VerifyDrafts(sequence, first_row, now); !verified.ok()) {
        failed.push_back(sequence.request);
        error = verified;
      }
      continue;
    }
    sequence.num_computed += item.count;
    // KeepKV edits its own blocks in place, so a KeepKV sequence shares blocks but publishes none.
    if (sequence.prefix && sequence.keepkv == nullptr) {
      prefix_cache_->Publish(sequence.tokens, sequence.num_computed, *sequence.prefix,
                             *sequence.kv);
    }
    const bool completes = sequence.uncomputed() == 0;
    const bool healthy = AfterKeepKvStep(item, failed, error);
    if (ScoresPrompt(sequence)) {
      const int32_t scored = completes ? item.count - 1 : item.count;
      if (healthy) {
        if (absl::Status status =
                ScorePrompt(sequence, sequence.num_computed - item.count, scored, row);
            !status.ok()) {
          failed.push_back(sequence.request);
          error = status;
        }
      }
      row += scored;
    }
    if (!completes) continue;  // a prompt chunk; the prompt goes on next step
    const int32_t logits_row = row++;
    if (!healthy) continue;
    if (std::find(failed.begin(), failed.end(), sequence.request) != failed.end()) continue;
    if (sequence.request->request.max_tokens == 0) {
      FinishScoring(sequence);  // retires `sequence`
      continue;
    }
    // Forks share the prompt as KeepKV left it.
    absl::Status sampled =
        sequence.pending_forks > 0 ? Fork(sequence, logits_row, now) : absl::OkStatus();
    if (sampled.ok()) sampled = SampleNext(sequence, logits_row, now).status();  // may retire it
    if (!sampled.ok()) {
      failed.push_back(sequence.request);
      error = sampled;
    }
  }
  if (!failed.empty()) FailRequests(failed, error);
}

bool StepLoop::ScoresPrompt(const Sequence& sequence) {
  return sequence.request->request.prompt_logprobs.has_value() && sequence.generated == 0;
}

absl::Status StepLoop::ScorePrompt(Sequence& sequence, int32_t first_position, int32_t rows,
                                   int32_t first_row) {
  RequestState& request = *sequence.request;
  const int32_t alternatives = *request.request.prompt_logprobs;
  for (int32_t j = 0; j < rows; ++j) {
    const int32_t row = first_row + j;
    const int32_t predicted = first_position + j + 1;  // the prompt position row j predicts
    KVD_CHECK(predicted >= 1 && predicted < std::ssize(sequence.tokens));
    absl::StatusOr<engine::SampledToken> scored = PromptTokenLogprob(
        logits_.top(row), sequence.tokens[predicted], alternatives,
        [&](std::vector<float>& whole) { return model_.CopyLogitsRow(row, whole); });
    if (!scored.ok()) return scored.status();
    request.prompt_logprobs[predicted - 1] = *std::move(scored);
  }
  return absl::OkStatus();
}

void StepLoop::FinishScoring(Sequence& sequence) {
  Event event = sequence.output->Finish(FinishReason::kLength);
  event.prompt_logprobs = sequence.request->prompt_logprobs;
  sequence.request->channel->Push(std::move(event));
  Close(TakeRunning(&sequence), FinishReason::kLength, /*event_sent=*/true);
}

bool StepLoop::AfterKeepKvStep(const Scheduled& item,
                               std::vector<std::shared_ptr<RequestState>>& failed,
                               absl::Status& error) {
  Sequence& sequence = *item.sequence;
  if (std::find(failed.begin(), failed.end(), sequence.request) != failed.end()) return false;
  if (sequence.keepkv == nullptr) return true;
  absl::StatusOr<cache_store::KeepKvCounts> counts = sequence.keepkv->AfterStep(
      *sequence.kv, *pool_, item.count, sequence.uncomputed() == 0, item.scores);
  if (!counts.ok()) {
    failed.push_back(sequence.request);
    error = counts.status();
    return false;
  }
  if (counts->merges + counts->evictions > 0) {
    metrics_.RecordKeepKv(counts->merges, counts->evictions, 0);
  }
  return true;
}

absl::Status StepLoop::Fork(Sequence& parent, int32_t logits_row, absl::Time now) {
  const int32_t forks = parent.pending_forks;
  parent.pending_forks = 0;
  for (int32_t k = 1; k <= forks; ++k) {
    auto child = std::make_unique<Sequence>();
    child->request = parent.request;
    child->choice = parent.choice + k;
    child->kv = NewKv();
    child->kv->ShareFrom(*parent.kv, *pool_);
    child->sampler = NewSampler(parent.request->request, child->choice);
    child->output = NewOutput(parent.request->request, child->choice);
    child->constrained = NewConstrained(parent.request->request);
    if (parent.keepkv != nullptr) {
      child->keepkv = std::make_unique<cache_store::KeepKvSequence>(*parent.keepkv);
    }
    child->prefix = parent.prefix;
    child->tokens = parent.tokens;
    child->num_computed = parent.num_computed;
    Sequence& forked = *child;
    waiting_.AddRunning(child->tenant());
    InsertRunning(std::move(child));
    if (absl::Status status = SampleNext(forked, logits_row, now).status(); !status.ok()) {
      return status;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<StepLoop::Sampled> StepLoop::SampleNext(
    Sequence& sequence, int32_t logits_row, absl::Time now, bool first_of_step,
    const std::optional<DraftProposal>& proposal) {
  RequestState& request = *sequence.request;
  const std::span<const int32_t> banned = sequence.output->Banned(sequence.generated);
  // A constrained sequence samples among the tokens its constraint allows next, those that
  // leave room to end the output whole within max_tokens wherever any does.
  std::shared_ptr<const structured::TokenMask> mask;
  if (sequence.constrained != nullptr) {
    if (!sequence.constrained->ready()) {
      KVD_CHECK(logits_row != kSavedRow);  // a saved row is sampled once its mask is ready
      KVD_RETURN_IF_ERROR(model_.CopyLogitsRow(logits_row, sequence.deferred_logits));
      return Sampled::kDeferred;
    }
    KVD_ASSIGN_OR_RETURN(mask, TakeMask(sequence));
    if (mask->count() == 0) {
      return absl::FailedPreconditionError(
          "the structured output is complete but the model has no end-of-sequence token to "
          "end it");
    }
  }
  const engine::AllowedTokens allowed = mask ? mask->allowed() : engine::AllowedTokens{};
  std::optional<engine::SampledToken> top_sampled;
  if (!proposal && logits_row != kSavedRow)
    top_sampled = sequence.sampler->SampleFromTop(logits_.top(logits_row), banned, allowed);
  if (!top_sampled) {
    if (whole_row_index_ != logits_row) {
      whole_row_index_ = -1;
      if (absl::Status status = model_.CopyLogitsRow(logits_row, whole_row_); !status.ok()) {
        return status;
      }
      whole_row_index_ = logits_row;
    }
    const size_t output_count = static_cast<size_t>(sequence.generated);
    top_sampled =
        proposal
            ? sequence.sampler->SampleVerifying(whole_row_, sequence.tokens, output_count, banned,
                                                allowed, proposal->token, proposal->probabilities)
            : sequence.sampler->Sample(whole_row_, sequence.tokens, output_count, banned, allowed);
  }
  const engine::SampledToken& sampled = *top_sampled;
  sequence.tokens.push_back(sampled.token);
  ++sequence.generated;
  ++request.completion_tokens;
  std::optional<double> first_token, inter_token;
  if (!request.produced_token) {
    first_token = Seconds(now - request.arrival);
  } else if (sequence.generated > 1 && first_of_step) {
    inter_token = Seconds(now - sequence.last_token_time);
  }
  request.produced_token = true;
  sequence.last_token_time = now;
  metrics_.RecordToken(sequence.tenant().id, first_token, inter_token);

  Event event = sequence.output->Accept(sampled, sequence.generated);
  if (sequence.generated == 1 && request.request.prompt_logprobs) {
    event.prompt_logprobs = request.prompt_logprobs;
  }
  const std::optional<FinishReason> finish = event.finish_reason;
  request.channel->Push(std::move(event));
  if (finish) {
    Close(TakeRunning(&sequence), *finish, /*event_sent=*/true);
    return Sampled::kFinished;
  }
  if (sequence.constrained != nullptr) StartMask(sequence, sampled.token);
  return Sampled::kGoesOn;
}

void StepLoop::StartMask(Sequence& sequence, std::optional<int32_t> token) {
  const Request& request = sequence.request->request;
  constraint_workers_.Start(request.tenant.id, sequence.constrained, token,
                            request.max_tokens - sequence.generated);
}

absl::StatusOr<std::shared_ptr<const structured::TokenMask>> StepLoop::TakeMask(
    Sequence& sequence) {
  const ConstrainedOutput& constrained = *sequence.constrained;
  metrics_.RecordConstraintMask(constrained.seconds());
  if (seconds_per_token_ > 0.0) {
    waiting_.Charge(sequence.tenant().id, constrained.seconds() / seconds_per_token_);
  }
  return constrained.mask();
}

void StepLoop::SampleDeferred(absl::Time now) {
  std::vector<Sequence*> ready;
  for (const auto& sequence : running_) {
    if (!sequence->awaits_mask()) continue;
    if (sequence->constrained->ready()) {
      ready.push_back(sequence.get());
    } else {
      metrics_.RecordConstraintMaskSkip();
    }
  }
  std::vector<std::shared_ptr<RequestState>> failed;
  absl::Status error;
  for (Sequence* sequence : ready) {
    std::shared_ptr<RequestState> request = sequence->request;
    whole_row_ = std::exchange(sequence->deferred_logits, {});
    whole_row_index_ = kSavedRow;
    absl::StatusOr<Sampled> sampled = SampleNext(*sequence, kSavedRow, now);  // may retire it
    whole_row_index_ = -1;
    if (!sampled.ok()) {
      failed.push_back(std::move(request));
      error = sampled.status();
    }
  }
  if (!failed.empty()) FailRequests(failed, error);
}

void StepLoop::InsertRunning(std::unique_ptr<Sequence> sequence) {
  const auto position =
      std::upper_bound(running_.begin(), running_.end(), sequence,
                       [](const std::unique_ptr<Sequence>& a, const std::unique_ptr<Sequence>& b) {
                         return a->order() < b->order();
                       });
  running_.insert(position, std::move(sequence));
}

std::unique_ptr<Sequence> StepLoop::TakeRunning(Sequence* sequence) {
  const auto it = std::find_if(running_.begin(), running_.end(),
                               [&](const auto& s) { return s.get() == sequence; });
  KVD_CHECK(it != running_.end());
  std::unique_ptr<Sequence> taken = std::move(*it);
  running_.erase(it);
  waiting_.RemoveRunning(taken->tenant().id);
  return taken;
}

void StepLoop::Preempt(std::unique_ptr<Sequence> sequence) {
  // Recompute: the blocks go back to the pool; the prompt and the tokens generated so far are
  // computed again on resumption, and generation continues where it stopped.
  ReleaseKv(*sequence);
  sequence->speculated.clear();
  sequence->deferred_logits.clear();  // the recompute's last row is sampled instead
  sequence->keepkv = NewKeepKv(sequence->request->request);  // compacts again once recomputed
  waiting_.Push(std::move(sequence));
}

void StepLoop::Close(std::unique_ptr<Sequence> sequence, FinishReason reason, bool event_sent) {
  RequestState& request = *sequence->request;
  if (!event_sent) request.channel->Push(sequence->output->Finish(reason));
  for (int32_t k = 1; k <= sequence->pending_forks; ++k) {
    Event event;
    event.index = sequence->choice + k;
    event.finish_reason = reason;
    request.channel->Push(std::move(event));
  }
  const int32_t closed = 1 + sequence->pending_forks;
  for (int32_t k = 0; k < closed; ++k) metrics_.RecordFinish(reason);
  ReleaseKv(*sequence);
  request.open_choices -= closed;
  if (request.open_choices == 0) FinishRequest(request, absl::OkStatus());
}

void StepLoop::FinishRequest(RequestState& request, const absl::Status& status) {
  if (request.done) return;
  request.done = true;
  if (!request.admitted) {
    request.admitted = true;
    on_dequeued_(request);
  }
  Event event;
  event.final = true;
  event.status = status;
  const auto& document = request.request.document;
  const int32_t document_tokens = document ? document->payload->original_length : 0;
  event.usage.cached_tokens = document_tokens + request.prefix_cached_tokens;
  event.usage.prompt_tokens = static_cast<int32_t>(request.request.prompt.size()) + document_tokens;
  event.usage.completion_tokens = request.completion_tokens;
  metrics_.RecordRequestDone(Seconds(clock_.Now() - request.arrival));
  request.channel->Push(std::move(event));
}

void StepLoop::FailRequests(const std::vector<std::shared_ptr<RequestState>>& failed,
                            const absl::Status& status) {
  auto is_failed = [&](const Sequence& sequence) {
    return std::any_of(failed.begin(), failed.end(),
                       [&](const auto& request) { return request == sequence.request; });
  };
  std::vector<Sequence*> doomed;
  for (const auto& sequence : running_) {
    if (is_failed(*sequence)) doomed.push_back(sequence.get());
  }
  for (Sequence* sequence : doomed) ReleaseKv(*TakeRunning(sequence));
  for (auto& sequence : waiting_.RemoveIf(is_failed)) ReleaseKv(*sequence);
  for (const auto& request : failed) FinishRequest(*request, status);
}

void StepLoop::FailAll(const absl::Status& status) {
  std::vector<std::shared_ptr<RequestState>> all;
  for (const auto& sequence : running_) all.push_back(sequence->request);
  for (auto& sequence : waiting_.RemoveIf([](const Sequence&) { return true; })) {
    all.push_back(sequence->request);
  }
  FailRequests(all, status);
  jobs_.FailAll(status);
  PublishGauges();
}

void StepLoop::PublishGauges() {
  int32_t keepkv_sequences = 0;
  double kept_entries = 0.0, own_tokens = 0.0;
  for (const auto& sequence : running_) {
    if (sequence->keepkv == nullptr) continue;
    ++keepkv_sequences;
    kept_entries += sequence->keepkv->mean_entries();
    own_tokens += sequence->keepkv->own_tokens();
  }
  // Cached prefix blocks no sequence holds count as free: the pool takes them back on demand.
  const PrefixCacheStats prefix = prefix_cache_ ? prefix_cache_->Stats() : PrefixCacheStats{};
  metrics_.RecordGauges(
      {.num_running = static_cast<int32_t>(running_.size()),
       .num_waiting = static_cast<int32_t>(waiting_.size()),
       .kv_blocks_total = pool_->num_blocks(),
       .kv_blocks_free = pool_->num_free_blocks() + static_cast<int32_t>(prefix.idle_blocks),
       .tenants = waiting_.Gauges(),
       .keepkv_sequences = keepkv_sequences,
       .keepkv_compressed_fraction = own_tokens > 0 ? 1.0 - kept_entries / own_tokens : 0.0,
       .prefix_cache_blocks = prefix.cached_blocks});
}

}  // namespace kvd::scheduler::internal
