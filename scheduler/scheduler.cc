#include "scheduler/scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "base/mutex.h"
#include "cache_store/kvzip/document_kv.h"
#include "scheduler/internal/compression_channel.h"
#include "scheduler/internal/request_channel.h"
#include "scheduler/internal/sequence.h"
#include "scheduler/internal/step_loop.h"
#include "scheduler/internal/wakeup.h"
#include "spdlog/spdlog.h"

namespace kvd::scheduler {
namespace {

absl::StatusOr<std::unique_ptr<engine::KvBlockPool>> CreatePool(engine::Model& model,
                                                                const SchedulerConfig& config) {
  const engine::ModelConfig& model_config = model.config();
  const size_t bytes = config.kv_cache_memory_fraction > 0.0
                           ? static_cast<size_t>(config.kv_cache_memory_fraction *
                                                 static_cast<double>(model.backend().MemoryBytes()))
                           : config.kv_cache_bytes;
  const int64_t blocks =
      std::min<int64_t>(engine::KvBlockPool::BlocksInBytes(
                            bytes, config.block_size, model_config.head_dim, config.kv_cache_dtype),
                        std::numeric_limits<int32_t>::max());
  const int64_t per_token = int64_t{model_config.num_layers} * model_config.num_kv_heads;
  if (blocks < per_token) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kv cache of ", bytes, " bytes holds ", blocks, " blocks of ", config.block_size,
        " entries; the model needs at least ", per_token, " (one per layer and kv head)"));
  }
  return engine::KvBlockPool::Create(model.backend(), {.num_blocks = static_cast<int32_t>(blocks),
                                                       .block_size = config.block_size,
                                                       .head_dim = model_config.head_dim,
                                                       .dtype = config.kv_cache_dtype});
}

// KV events kept for a follower that falls behind (a few MiB); one further behind starts again
// from a snapshot.
constexpr size_t kKvEventsKept = 16384;

// The draft model of speculative decoding, on the served model's backend; its vocabulary and
// head size must be the served model's (same ids; its entries in the same pool).
absl::StatusOr<std::unique_ptr<engine::Model>> LoadDraftModel(
    engine::Model& model, const SpeculativeConfig& speculative) {
  if (speculative.method != SpeculativeMethod::kDraftModel) return nullptr;
  auto draft =
      engine::Model::Load(speculative.model, model.backend(), kernels::DTypeFromName(speculative.dtype));
  if (!draft.ok()) {
    return base::ConfigKeyError("speculative.model", absl::StrCat("cannot load the draft model: ",
                                                                  draft.status().message()));
  }
  const engine::ModelConfig& served = model.config();
  const engine::ModelConfig& drafting = (*draft)->config();
  if (drafting.vocab_size != served.vocab_size || drafting.head_dim != served.head_dim) {
    return base::ConfigKeyError(
        "speculative.model",
        absl::StrCat("the draft model's vocabulary and head size (", drafting.vocab_size, ", ",
                     drafting.head_dim, ") must be the served model's (", served.vocab_size, ", ",
                     served.head_dim, ")"));
  }
  spdlog::info("speculative decoding: draft model {} ({} layers), up to {} tokens a step",
               speculative.model, drafting.num_layers, speculative.num_speculative_tokens);
  return draft;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(engine::Model& model,
                                                             const text::Tokenizer* tokenizer,
                                                             const SchedulerConfig& config,
                                                             const Clock& clock) {
  if (auto status = config.Validate(); !status.ok()) return status;
  auto draft_model = LoadDraftModel(model, config.speculative);
  if (!draft_model.ok()) return draft_model.status();
  auto pool = CreatePool(model, config);
  if (!pool.ok()) return pool.status();
  const engine::ModelConfig& model_config = model.config();
  const int64_t blocks_per_head =
      (*pool)->num_blocks() / (int64_t{model_config.num_layers} * model_config.num_kv_heads);
  const int32_t max_sequence_tokens = static_cast<int32_t>(
      std::min<int64_t>(blocks_per_head * config.block_size, std::numeric_limits<int32_t>::max()));
  std::unique_ptr<Scheduler> scheduler(
      new Scheduler(model, tokenizer, config, clock, max_sequence_tokens));
  scheduler->draft_model_ = *std::move(draft_model);
  scheduler->step_loop_ = std::make_unique<internal::StepLoop>(
      model, scheduler->draft_model_.get(), *std::move(pool), tokenizer, config, clock,
      scheduler->metrics_, scheduler->kv_events_.get(),
      [raw = scheduler.get()](const internal::RequestState& request) { raw->OnDequeued(request); },
      [wakeup = scheduler->wakeup_] { wakeup->Notify(); });
  spdlog::info("kv cache: {} blocks of {} {} entries, {} tokens per sequence at most",
               scheduler->step_loop_->pool().num_blocks(), config.block_size,
               kernels::DTypeName(config.kv_cache_dtype), max_sequence_tokens);
  if (config.prefix_cache.enabled &&
      config.prefix_cache.max_pool_fraction * scheduler->step_loop_->pool().num_blocks() <
          int64_t{model_config.num_layers} * model_config.num_kv_heads) {
    spdlog::warn("prefix cache: max_pool_fraction {} of the pool holds no block of {} tokens; "
                 "nothing will be cached",
                 config.prefix_cache.max_pool_fraction, config.block_size);
  }
  return scheduler;
}

Scheduler::Scheduler(engine::Model& model, const text::Tokenizer* tokenizer,
                     const SchedulerConfig& config, const Clock& clock, int32_t max_sequence_tokens)
    : model_(model),
      tokenizer_(tokenizer),
      config_(config),
      clock_(clock),
      max_sequence_tokens_(max_sequence_tokens),
      progress_(clock),
      kv_events_(config.prefix_cache.enabled && config.prefix_cache.kv_events
                     ? std::make_unique<KvEventLog>(config.block_size, kKvEventsKept)
                     : nullptr),
      wakeup_(std::make_shared<internal::Wakeup>()) {}

Scheduler::~Scheduler() { Stop(); }

MetricsSnapshot Scheduler::Metrics() const {
  MetricsSnapshot snapshot = metrics_.Snapshot();
  snapshot.stalled_seconds = absl::ToDoubleSeconds(StalledFor());
  return snapshot;
}

absl::Status Scheduler::Validate(const Request& request) const {
  const engine::ModelConfig& config = model_.config();
  auto invalid = [](auto&&... parts) { return absl::InvalidArgumentError(absl::StrCat(parts...)); };
  if (request.prompt.empty()) return invalid("the prompt is empty");
  for (int32_t id : request.prompt) {
    if (id < 0 || id >= config.vocab_size) {
      return invalid("prompt token id ", id, " is outside the vocabulary of ", config.vocab_size);
    }
  }
  if (request.n < 1 || request.n > std::min(config_.max_n, config_.max_num_seqs)) {
    return invalid("n must be in [1, ", std::min(config_.max_n, config_.max_num_seqs), "], got ",
                   request.n);
  }
  if (request.prompt_logprobs) {
    if (*request.prompt_logprobs < 0 || *request.prompt_logprobs > 20) {
      return invalid("prompt_logprobs must be in [0, 20], got ", *request.prompt_logprobs);
    }
    if (request.document || request.keepkv) {
      return invalid("prompt_logprobs cannot be combined with a document or a KV budget");
    }
    if (request.max_tokens == 0 && request.n != 1) {
      return invalid("max_tokens 0 scores the prompt once: n must be 1, got ", request.n);
    }
  }
  if (request.num_speculative_tokens &&
      (*request.num_speculative_tokens < 0 || *request.num_speculative_tokens > 32)) {
    return invalid("num_speculative_tokens must be in [0, 32], got ",
                   *request.num_speculative_tokens);
  }
  if (request.max_tokens < (request.prompt_logprobs ? 0 : 1)) {
    return invalid("max_tokens must be at least ", request.prompt_logprobs ? 0 : 1, ", got ",
                   request.max_tokens);
  }
  if (request.min_tokens < 0 || request.min_tokens > request.max_tokens) {
    return invalid("min_tokens must be in [0, max_tokens = ", request.max_tokens, "], got ",
                   request.min_tokens);
  }
  const int64_t prompt = static_cast<int64_t>(request.prompt.size());
  int64_t document_tokens = 0;
  if (request.document) {
    const cache_store::DocumentPayload* payload = request.document->payload.get();
    if (payload == nullptr || request.document->key.empty()) {
      return invalid("a document prefix needs its cache and a key");
    }
    if (payload->num_layers != config.num_layers || payload->num_kv_heads != config.num_kv_heads ||
        payload->head_dim != config.head_dim) {
      return invalid("the document's cache was computed for another model geometry");
    }
    document_tokens = payload->original_length;
    const int64_t heads = int64_t{config.num_layers} * config.num_kv_heads;
    const int64_t blocks = cache_store::DocumentBlocks(*payload, config_.block_size) +
                           heads * ((prompt + config_.block_size) / config_.block_size + 1);
    if (blocks > step_loop_->pool().num_blocks()) {
      return invalid("the document's cache and the prompt need ", blocks,
                     " KV blocks; the cache has ", step_loop_->pool().num_blocks());
    }
  }
  if (document_tokens + prompt + request.max_tokens > config.max_position_embeddings) {
    return invalid("this model's maximum context length is ", config.max_position_embeddings,
                   " tokens; the prompt has ", document_tokens + prompt,
                   " tokens and max_tokens is ", request.max_tokens);
  }
  if (prompt + 1 > max_sequence_tokens_) {
    return invalid("the prompt has ", prompt, " tokens; the KV cache holds at most ",
                   max_sequence_tokens_, " tokens per sequence");
  }
  // Without a KV budget or a document, a sequence keeps every token it computes: one longer
  // than the whole cache could only be cut short.
  if (!request.keepkv && !request.document && prompt + request.max_tokens > max_sequence_tokens_) {
    return invalid("the prompt has ", prompt, " tokens and max_tokens is ", request.max_tokens,
                   "; the KV cache holds at most ", max_sequence_tokens_, " tokens per sequence");
  }
  if (auto status = request.sampling.Validate(config.vocab_size); !status.ok()) return status;
  if (request.keepkv) {
    if (auto status = request.keepkv->Validate(); !status.ok()) return status;
  }
  for (int32_t id : request.stop_token_ids) {
    if (id < 0 || id >= config.vocab_size) {
      return invalid("stop token id ", id, " is outside the vocabulary of ", config.vocab_size);
    }
  }
  if (request.stop.size() > kMaxStopStrings) {
    return invalid("at most ", kMaxStopStrings, " stop strings, got ", request.stop.size());
  }
  for (const std::string& stop : request.stop) {
    if (stop.empty()) return invalid("stop strings must not be empty");
  }
  if (!request.stop.empty() && tokenizer_ == nullptr) {
    return invalid("stop strings need a tokenizer, and this model has none");
  }
  if (request.constraint != nullptr) {
    // A model's head may be padded past the tokenizer's vocabulary; the padding is never allowed.
    if (request.constraint->trie().vocab_size() > config.vocab_size) {
      return invalid("the structured output's vocabulary has ",
                     request.constraint->trie().vocab_size(), " tokens; the model's has ",
                     config.vocab_size);
    }
    // The constraint ends the output with an end token, which must end the sequence.
    if (request.ignore_eos) return invalid("ignore_eos cannot be combined with a structured output");
    if (request.min_tokens > 0) {
      return invalid("min_tokens cannot be combined with a structured output");
    }
  }
  const TenantPolicy& tenant = request.tenant;
  if (tenant.id.empty()) return invalid("the tenant id is empty");
  if (!(tenant.weight > 0.0 && std::isfinite(tenant.weight))) {
    return invalid("tenant '", tenant.id, "': weight must be positive, got ", tenant.weight);
  }
  if (tenant.max_running_sequences < 0 || tenant.max_queued_requests < 0) {
    return invalid("tenant '", tenant.id, "': limits must be >= 0");
  }
  return absl::OkStatus();
}

absl::StatusOr<RequestHandle> Scheduler::Submit(Request request) {
  if (auto status = Validate(request); !status.ok()) return status;
  auto state = std::make_shared<internal::RequestState>();
  const std::string tenant = request.tenant.id;
  const int32_t tenant_limit = request.tenant.max_queued_requests;
  state->request = std::move(request);
  state->arrival = clock_.Now();
  std::shared_ptr<internal::RequestChannel> channel;
  {
    base::MutexLock lock(mu_);
    if (stopping_) return absl::UnavailableError("the scheduler is stopping");
    if (queued_ >= config_.max_queued_requests) {
      return absl::UnavailableError(absl::StrCat("the server is overloaded: ", queued_,
                                                 " requests are waiting; try again later"));
    }
    int32_t& tenant_queued = queued_by_tenant_[tenant];
    if (tenant_limit > 0 && tenant_queued >= tenant_limit) {
      if (tenant_queued == 0) queued_by_tenant_.erase(tenant);
      return absl::ResourceExhaustedError(
          absl::StrCat("tenant '", tenant, "' already has ", tenant_queued,
                       " requests waiting, its limit; try again later"));
    }
    ++tenant_queued;
    ++queued_;
    const uint64_t id = next_id_++;
    state->arrival_order = static_cast<int64_t>(id);
    channel = std::make_shared<internal::RequestChannel>(id, wakeup_);
    state->channel = channel;
    inbox_.push_back(std::move(state));
  }
  wakeup_->Notify();
  return RequestHandle(std::move(channel));
}

absl::StatusOr<CompressionHandle> Scheduler::SubmitCompression(
    std::unique_ptr<cache_store::DocumentCompressor> compressor) {
  const int64_t blocks = compressor->PeakBlocks(config_.block_size);
  if (blocks > step_loop_->pool().num_blocks()) {
    return absl::InvalidArgumentError(absl::StrCat("compressing this document takes ", blocks,
                                                   " KV blocks; the cache has ",
                                                   step_loop_->pool().num_blocks()));
  }
  auto channel = std::make_shared<internal::CompressionChannel>(wakeup_);
  {
    base::MutexLock lock(mu_);
    if (stopping_) return absl::UnavailableError("the scheduler is stopping");
    compression_inbox_.push_back({std::move(compressor), channel});
  }
  wakeup_->Notify();
  return CompressionHandle(std::move(channel));
}

void Scheduler::OnDequeued(const internal::RequestState& request) {
  base::MutexLock lock(mu_);
  --queued_;
  const auto it = queued_by_tenant_.find(request.request.tenant.id);
  if (it != queued_by_tenant_.end() && --it->second == 0) queued_by_tenant_.erase(it);
}

void Scheduler::DrainInbox() {
  std::vector<std::shared_ptr<internal::RequestState>> arrived;
  std::vector<PendingCompression> compressions;
  {
    base::MutexLock lock(mu_);
    arrived.swap(inbox_);
    compressions.swap(compression_inbox_);
  }
  for (auto& request : arrived) step_loop_->Add(std::move(request));
  for (auto& job : compressions) {
    step_loop_->AddCompression(std::move(job.compressor), std::move(job.channel));
  }
}

absl::StatusOr<StepReport> Scheduler::Step() {
  DrainInbox();
  return step_loop_->Step();
}

bool Scheduler::HasWork() {
  DrainInbox();
  return step_loop_->HasWork();
}

void Scheduler::Start() {
  thread_ = std::thread([this] { Run(); });
}

void Scheduler::Run() {
  while (true) {
    {
      base::MutexLock lock(mu_);
      if (stopping_) break;
    }
    if (!HasWork()) {
      progress_.Idle();
      wakeup_->Wait();
      continue;
    }
    progress_.Busy();
    if (auto report = step_loop_->Step(); !report.ok()) {
      spdlog::error("scheduler step failed: {}", report.status().ToString());
    }
    progress_.Stepped();
  }
}

void Scheduler::Stop() {
  {
    base::MutexLock lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  wakeup_->Notify();
  if (thread_.joinable()) thread_.join();
  DrainInbox();
  step_loop_->FailAll(absl::UnavailableError("the scheduler stopped"));
}

}  // namespace kvd::scheduler
