// StepLoop's draft model: before a step, the running sequences that draft in it run the draft
// model together, first over what each one's draft cache lacks (the document it continues and
// its verified tokens, so that a fresh sequence catches up once) and then one token per pass,
// each drafting up to its room. A sampling sequence draws each draft from the draft model's
// distribution under its own sampling parameters and keeps that distribution, which the
// verification needs (speculative sampling); a greedy one drafts the draft model's argmax.
#include <algorithm>
#include <limits>
#include <span>

#include "absl/container/flat_hash_map.h"
#include "base/check.h"
#include "scheduler/internal/step_loop.h"
#include "spdlog/spdlog.h"

namespace kvd::scheduler::internal {
namespace {

// Mixed into a request's seed for its drafts, so that they do not replay its own draws.
constexpr uint64_t kDraftSeedSalt = 0x9e3779b97f4a7c15ULL;

// The token ids of the document a sequence continues that the draft model reads: up to the
// first id outside the vocabulary (a payload's ids are the served model's unless it says
// otherwise; such a document is read only that far).
std::span<const int32_t> DocumentTokens(const Sequence& sequence, int32_t vocab_size) {
  const std::optional<DocumentPrefix>& document = sequence.request->request.document;
  if (!document) return {};
  const std::vector<int32_t>& text = document->payload->prefix_token_ids;
  const auto end = std::find_if(text.begin(), text.end(),
                                [&](int32_t id) { return id < 0 || id >= vocab_size; });
  return {text.data(), static_cast<size_t>(end - text.begin())};
}

// What the draft model has yet to read for a sequence, from position `cached` of what it reads
// (the document it continues, then the sequence's tokens), without copying what it has read.
std::vector<int32_t> UnreadContext(std::span<const int32_t> document,
                                   const std::vector<int32_t>& tokens, int32_t cached) {
  std::vector<int32_t> unread;
  if (cached < std::ssize(document)) unread.assign(document.begin() + cached, document.end());
  const int32_t in_tokens = std::max<int32_t>(0, cached - static_cast<int32_t>(document.size()));
  unread.insert(unread.end(), tokens.begin() + in_tokens, tokens.end());
  return unread;
}

}  // namespace

void StepLoop::TrimDraftKv(Sequence& sequence) {
  if (sequence.draft_kv == nullptr) return;
  const int32_t verified =
      static_cast<int32_t>(DocumentTokens(sequence, draft_model_->config().vocab_size).size()) +
      sequence.num_computed;
  const int32_t extra = std::max(0, sequence.draft_kv->next_position() - verified);
  // Entries past the verified tokens lie past the document's shared blocks (the first append
  // after a shared, partly filled block copies it), so nothing stops the drop.
  KVD_CHECK(sequence.draft_kv->DropLast(*pool_, extra).ok());
}

void StepLoop::ReleaseDraftKvs() {
  for (const std::unique_ptr<Sequence>& sequence : running_) {
    if (sequence->draft_kv != nullptr) sequence->draft_kv->Release(*pool_);
  }
  for (auto& [key, document] : draft_documents_) document.kv->Release(*pool_);
  draft_documents_.clear();
}

int64_t StepLoop::DraftOnlyBlocks() const {
  absl::flat_hash_map<int32_t, int32_t> references;  // block -> references from draft caches
  auto count = [&](const engine::SequenceKv& kv) {
    for (int32_t layer = 0; layer < kv.num_layers(); ++layer) {
      for (int32_t head = 0; head < kv.num_kv_heads(); ++head) {
        for (int32_t block : kv.blocks(layer, head)) ++references[block];
      }
    }
  };
  for (const std::unique_ptr<Sequence>& sequence : running_) {
    if (sequence->draft_kv != nullptr) count(*sequence->draft_kv);
  }
  for (const auto& [key, document] : draft_documents_) count(*document.kv);
  return std::count_if(references.begin(), references.end(), [&](const auto& entry) {
    return pool_->ref_count(entry.first) == entry.second;
  });
}

std::unique_ptr<engine::SequenceKv> StepLoop::NewDraftKv(const Sequence& sequence) {
  const engine::ModelConfig& draft_config = draft_model_->config();
  auto kv =
      std::make_unique<engine::SequenceKv>(draft_config.num_layers, draft_config.num_kv_heads);
  const std::span<const int32_t> text = DocumentTokens(sequence, draft_config.vocab_size);
  if (text.empty()) return kv;
  const DocumentPrefix& document = *sequence.request->request.document;
  std::erase_if(draft_documents_, [this](auto& entry) {
    if (!entry.second.payload.expired()) return false;
    entry.second.kv->Release(*pool_);
    return true;
  });
  DraftDocument& cached = draft_documents_[document.key];
  if (cached.kv == nullptr || cached.payload.lock() != document.payload) {
    if (cached.kv != nullptr) cached.kv->Release(*pool_);
    cached = {.payload = document.payload,
              .kv = std::make_unique<engine::SequenceKv>(draft_config.num_layers,
                                                         draft_config.num_kv_heads)};
    const int32_t length = static_cast<int32_t>(text.size());
    bool computed = cached.kv->BlocksToReserve(*pool_, length) + watermark_blocks_ <=
                        pool_->num_free_blocks() &&
                    cached.kv->Reserve(*pool_, length).ok();
    // In chunks of a step's tokens, so that the draft model's scratch stays a step's size.
    for (int32_t done = 0; computed && done < length;) {
      const int32_t chunk = std::min(length - done, config_.max_num_batched_tokens);
      const engine::SequenceStep step{.kv = cached.kv.get(),
                                      .tokens = text.subspan(done, chunk),
                                      .logits = engine::LogitRows::kNone};
      computed = draft_model_->Forward({&step, 1}, *pool_, draft_logits_).ok();
      done += chunk;
    }
    if (!computed) {
      cached.kv->Release(*pool_);  // the sequence reads the document itself
      draft_documents_.erase(document.key);
      return kv;
    }
  }
  kv->ShareFrom(*cached.kv, *pool_);
  return kv;
}

void StepLoop::DraftWithModel(int32_t budget) {
  KVD_CHECK(draft_model_ != nullptr);
  const engine::ModelConfig& draft_config = draft_model_->config();
  struct Job {
    Sequence* sequence;
    int32_t room;                 // drafts it makes
    std::vector<int32_t> inputs;  // what the first pass reads for it
  };
  std::vector<Job> jobs;
  int32_t available = budget;
  // The first pass reads at most a step's worth of tokens; a sequence past it catches up over
  // the next steps and drafts once it has.
  int32_t catch_up_left = config_.max_num_batched_tokens;
  for (size_t i = 0; i < running_.size(); ++i) {
    Sequence& sequence = *running_[i];
    sequence.model_drafts.clear();
    sequence.draft_probabilities.clear();
    TrimDraftKv(sequence);
    const int32_t later = static_cast<int32_t>(running_.size() - i - 1);
    const int32_t room = DraftRoom(sequence, available - later);
    available -= room > 0 ? 1 + room : std::min(sequence.uncomputed(), available);
    if (room == 0) continue;
    const std::span<const int32_t> document = DocumentTokens(sequence, draft_config.vocab_size);
    const int64_t context_length = std::ssize(document) + std::ssize(sequence.tokens);
    // A draft model with a shorter context than the served one drafts only within it.
    if (context_length + room > draft_config.max_position_embeddings) {
      if (sequence.draft_kv != nullptr) sequence.draft_kv->Release(*pool_);
      continue;
    }
    if (sequence.draft_kv == nullptr || sequence.draft_kv->next_position() == 0) {
      if (sequence.draft_kv != nullptr) sequence.draft_kv->Release(*pool_);
      sequence.draft_kv = NewDraftKv(sequence);
    }
    const int32_t cached = sequence.draft_kv->next_position();
    KVD_CHECK(cached < context_length);
    std::vector<int32_t> inputs = UnreadContext(document, sequence.tokens, cached);
    if (std::ssize(inputs) > catch_up_left) {
      inputs.resize(catch_up_left);
      if (inputs.empty()) continue;
      jobs.push_back({&sequence, 0, std::move(inputs)});  // catching up only
    } else {
      jobs.push_back({&sequence, room, std::move(inputs)});
    }
    Job& job = jobs.back();
    const int32_t entries = static_cast<int32_t>(job.inputs.size()) + std::max(0, job.room - 1);
    if (sequence.draft_kv->BlocksToReserve(*pool_, entries) + watermark_blocks_ >
            pool_->num_free_blocks() ||
        !sequence.draft_kv->Reserve(*pool_, entries).ok()) {
      sequence.draft_kv->Release(*pool_);  // no room: it drafts again once there is
      jobs.pop_back();
      continue;
    }
    catch_up_left -= static_cast<int32_t>(job.inputs.size());
    if (sequence.draft_sampler == nullptr) {
      engine::SamplingParams params = sequence.sampler->params();
      params.logprobs = false;
      params.top_logprobs = 0;
      if (params.seed) params.seed = *params.seed ^ kDraftSeedSalt;
      sequence.draft_sampler = std::make_unique<engine::Sampler>(std::move(params), seeds_());
    }
  }

  // Pass p reads each job's inputs (p = 0) or its last draft, and drafts its token p + 1.
  std::vector<engine::SequenceStep> steps;
  std::vector<Job*> stepped;
  std::vector<int32_t> context;
  for (int32_t pass = 0;; ++pass) {
    steps.clear();
    stepped.clear();
    for (Job& job : jobs) {
      if (pass == 0) {
        steps.push_back(
            {.kv = job.sequence->draft_kv.get(),
             .tokens = job.inputs,
             .logits = job.room > 0 ? engine::LogitRows::kLast : engine::LogitRows::kNone});
      } else if (pass < job.room) {
        steps.push_back({.kv = job.sequence->draft_kv.get(),
                         .tokens = std::span<const int32_t>(job.sequence->model_drafts).last(1)});
      } else {
        continue;
      }
      if (job.room > pass) stepped.push_back(&job);
    }
    if (steps.empty()) return;
    if (absl::Status status = draft_model_->Forward(steps, *pool_, draft_logits_); !status.ok()) {
      // Drafts are an optimization: without them every sequence decodes as usual.
      spdlog::warn("draft model step failed, drafting nothing this step: {}",
                   std::string(status.message()));
      for (Job& job : jobs) {
        job.sequence->model_drafts.clear();
        job.sequence->draft_probabilities.clear();
        job.sequence->draft_kv->Release(*pool_);
      }
      return;
    }
    for (size_t row = 0; row < stepped.size(); ++row) {
      Sequence& sequence = *stepped[row]->sequence;
      const int32_t drafted = static_cast<int32_t>(sequence.model_drafts.size());
      context.assign(sequence.tokens.begin(), sequence.tokens.end());
      context.insert(context.end(), sequence.model_drafts.begin(), sequence.model_drafts.end());
      const size_t output_count = static_cast<size_t>(sequence.generated + drafted);
      const std::span<const int32_t> banned = sequence.output->Banned(sequence.generated + drafted);
      const std::span<const float> logits = draft_logits_.row(static_cast<int32_t>(row));
      if (sequence.sampler->params().temperature == 0.0f) {
        sequence.model_drafts.push_back(
            sequence.draft_sampler->Sample(logits, context, output_count, banned).token);
      } else {
        std::vector<float> probabilities =
            sequence.draft_sampler->Probabilities(logits, context, output_count, banned);
        sequence.model_drafts.push_back(sequence.draft_sampler->DrawFrom(probabilities));
        sequence.draft_probabilities.push_back(std::move(probabilities));
      }
    }
  }
}

}  // namespace kvd::scheduler::internal
