// StepLoop's admission: which running sequences a step continues, which waiting ones it admits,
// and the documents, cached prefixes and freed blocks that admission draws on.
#include <algorithm>

#include "base/check.h"
#include "scheduler/internal/step_loop.h"

namespace kvd::scheduler::internal {

void StepLoop::ScheduleRunning(int32_t& budget, std::vector<Scheduled>& scheduled,
                               StepReport& report) {
  // Decoding sequences after each position: a prompt chunk leaves each of them its token, so
  // one tenant's long prompts never hold another's stream back.
  std::vector<int32_t> decodes_after(running_.size() + 1, 0);
  for (size_t i = running_.size(); i-- > 0;) {
    const Sequence& later = *running_[i];
    decodes_after[i] = decodes_after[i + 1] + (!later.awaits_mask() && later.uncomputed() == 1);
  }
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Sequence* sequence = running_[i].get();
    if (sequence->awaits_mask()) continue;  // sits the step out (SampleDeferred)
    const int32_t chunk_budget =
        sequence->uncomputed() > 1 ? budget - decodes_after[i + 1] : budget;
    if (chunk_budget <= 0) continue;
    // Drafts take only what leaves every later running sequence a token, and free blocks alone:
    // they are the first thing to go.
    Draft(*sequence, budget - static_cast<int32_t>(running_.size() - i - 1));
    if (!sequence->speculated.empty() &&
        sequence->kv->BlocksToReserve(*pool_, static_cast<int32_t>(sequence->speculated.size())) >
            pool_->num_free_blocks()) {
      sequence->speculated.clear();
    }
    const int32_t count = sequence->speculated.empty()
                              ? std::min(sequence->uncomputed(), chunk_budget)
                              : static_cast<int32_t>(sequence->speculated.size());
    bool reserved = false;
    while (!(reserved = sequence->kv->Reserve(*pool_, count).ok())) {
      if (MakeRoom(pool_->num_free_blocks() + sequence->kv->BlocksToReserve(*pool_, count))) {
        continue;
      }
      if (running_.size() == 1) {
        if (const int64_t held = jobs_.HeldBlocks();
            held > 0 && sequence->kv->BlocksToReserve(*pool_, count) <=
                            pool_->num_free_blocks() + IdleBlocks() + held) {
          // Short of the blocks a compression holds, not of the cache: it recomputes once the
          // compression has ended.
          sequence->waits_for_compressions = true;
          sequence->holds_back_compressions = compressions_held_back_;
          report.preempted.push_back(sequence->request->channel->id());
          Preempt(TakeRunning(sequence));
          return;
        }
        // Alone and still out of blocks: the sequence has filled the whole cache.
        Close(TakeRunning(sequence), FinishReason::kLength, /*event_sent=*/false);
        return;
      }
      // Recompute preemption of the lowest-priority, latest sequence, possibly this one.
      const bool preempting_self = running_.back().get() == sequence;
      report.preempted.push_back(running_.back()->request->channel->id());
      Preempt(TakeRunning(running_.back().get()));
      if (preempting_self) return;
    }
    scheduled.push_back({sequence, count});
    budget -= count;
    waiting_.Charge(sequence->tenant().id, count);
  }
}

void StepLoop::AdmitWaiting(int32_t& budget, std::vector<Scheduled>& scheduled,
                            StepReport& report) {
  while (budget > 0) {
    Sequence* candidate = waiting_.Next();
    if (candidate == nullptr) return;
    if (candidate->waits_for_compressions) {
      if (jobs_.HeldBlocks() > 0) return;
      candidate->waits_for_compressions = false;
    }
    const size_t slots = 1 + static_cast<size_t>(candidate->pending_forks);
    if (running_.size() + slots > static_cast<size_t>(config_.max_num_seqs)) return;
    if (!AttachDocument(*candidate)) return;
    AttachPrefix(*candidate);
    const int32_t count = std::min(candidate->uncomputed(), budget);
    // Keep a margin of free blocks for the running sequences' growth, unless none run.
    const int64_t margin = running_.empty() ? 0 : watermark_blocks_;
    if (!MakeRoom(candidate->kv->BlocksToReserve(*pool_, count) + margin)) {
      // A candidate left waiting keeps its document but not a cached prefix, which costs
      // nothing to share again.
      if (candidate->prefix) ReleaseKv(*candidate);
      return;
    }
    if (!candidate->kv->Reserve(*pool_, count).ok()) {
      ReleaseKv(*candidate);
      return;
    }
    std::unique_ptr<Sequence> sequence = waiting_.PopForRunning(candidate);
    RequestState& request = *sequence->request;
    if (!request.admitted) {
      request.admitted = true;
      report.admitted.push_back(request.channel->id());
      metrics_.RecordAdmission(sequence->tenant().id,
                               static_cast<int32_t>(request.request.prompt.size()),
                               absl::ToDoubleSeconds(clock_.Now() - request.arrival));
      if (sequence->prefix) {
        // What the lookup found is what the request does not compute (counted once, as usage).
        request.prefix_cached_tokens = sequence->num_computed;
        metrics_.RecordPrefixCache(sequence->tenant().id,
                                   static_cast<int32_t>(sequence->tokens.size()),
                                   sequence->num_computed);
      }
      on_dequeued_(request);
    }
    scheduled.push_back({sequence.get(), count});
    budget -= count;
    waiting_.Charge(sequence->tenant().id, count);
    InsertRunning(std::move(sequence));
  }
}

bool StepLoop::AttachDocument(Sequence& candidate) {
  const std::optional<DocumentPrefix>& document = candidate.request->request.document;
  // A sequence holds its document from admission until it is preempted or ends.
  if (!document || candidate.kv->next_position() > 0) return true;
  const int64_t margin = running_.empty() ? 0 : watermark_blocks_;
  if (!MakeRoom(documents_.BlocksToLoad(*document) + margin + 1)) return false;
  absl::StatusOr<const engine::SequenceKv*> loaded = documents_.Acquire(*document);
  if (!loaded.ok()) {
    if (!absl::IsResourceExhausted(loaded.status())) {
      FailRequests({candidate.request}, loaded.status());
    }
    return false;
  }
  candidate.kv->ShareFrom(**loaded, *pool_);
  return true;
}

void StepLoop::AttachPrefix(Sequence& candidate) {
  if (!candidate.prefix || candidate.kv->next_position() > 0) return;
  KVD_CHECK(candidate.num_computed == 0);
  const Request& request = candidate.request->request;
  // KeepKV scores the prompt by the attention of its last `window` queries, so those are
  // always computed, and shares only prompt tokens (a recomputed sequence's output is its own).
  const int32_t min_uncomputed =
      request.keepkv ? static_cast<int32_t>(candidate.tokens.size() - request.prompt.size()) +
                           std::max(1, request.keepkv->window)
                     : 1;
  candidate.num_computed =
      prefix_cache_->Attach(candidate.tokens, min_uncomputed, *candidate.prefix, *candidate.kv);
  // Each attempt at admission shares anew (a failed one let its prefix go), so KeepKV's own
  // part is set each time.
  if (candidate.keepkv != nullptr) candidate.keepkv = NewKeepKv(request, candidate.num_computed);
}

int64_t StepLoop::IdleBlocks() const {
  return documents_.IdleBlocks() +
         (prefix_cache_ != nullptr ? prefix_cache_->Stats().idle_blocks : 0);
}

bool StepLoop::MakeRoom(int64_t blocks) {
  if (pool_->num_free_blocks() >= blocks) return true;
  if (pool_->num_free_blocks() + IdleBlocks() < blocks) {
    // Draft caches never keep a sequence waiting or get one preempted; they stay when
    // dropping them would not make the room either.
    if (pool_->num_free_blocks() + IdleBlocks() + DraftOnlyBlocks() < blocks) return false;
    ReleaseDraftKvs();
  }
  FreeIdle(blocks);
  return pool_->num_free_blocks() >= blocks;
}

void StepLoop::FreeIdle(int64_t blocks) {
  if (!documents_.MakeRoom(blocks) && prefix_cache_ != nullptr) prefix_cache_->MakeRoom(blocks);
  if (pool_->num_free_blocks() < blocks && pool_->num_free_blocks() + DraftOnlyBlocks() >= blocks) {
    ReleaseDraftKvs();
  }
}

void StepLoop::ReleaseKv(Sequence& sequence) {
  if (sequence.prefix) {
    prefix_cache_->Touch(*sequence.prefix);
    sequence.prefix->keys.clear();
  }
  sequence.kv->Release(*pool_);
  if (sequence.draft_kv != nullptr) sequence.draft_kv->Release(*pool_);
  sequence.num_computed = 0;
}

}  // namespace kvd::scheduler::internal
