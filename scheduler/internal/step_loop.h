// The continuous-batching step: which sequences run (decodes first, then prompt chunks under
// the token budget), preemption by recompute when KV blocks run out, one batched forward pass,
// sampling, events, and retirement. Thread: scheduler (everything here).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/kv_cache.h"
#include "engine/model.h"
#include "scheduler/clock.h"
#include "scheduler/config.h"
#include "scheduler/internal/compression_jobs.h"
#include "scheduler/internal/constrained_output.h"
#include "scheduler/internal/draft_acceptance.h"
#include "scheduler/internal/fair_queue.h"
#include "scheduler/internal/ngram_drafter.h"
#include "scheduler/internal/prefix_cache.h"
#include "scheduler/internal/resident_documents.h"
#include "scheduler/internal/sequence.h"
#include "scheduler/metrics.h"
#include "scheduler/step_report.h"
#include "text/tokenizer.h"

namespace kvd::scheduler::internal {

class StepLoop {
 public:
  // `kv_events`, when not null, receives the prefix cache's events, one batch per step.
  // `on_dequeued` runs once per request when it stops counting as queued: admitted for the
  // first time, or ended while still waiting.
  // `draft_model`, when not null, drafts for speculative decoding (speculative.method
  // draft_model); its entries share the pool. `wake` runs on a constraint worker whenever a
  // constrained sequence's mask is ready (HasWork may have turned true).
  StepLoop(engine::Model& model, engine::Model* draft_model,
           std::unique_ptr<engine::KvBlockPool> pool, const text::Tokenizer* tokenizer,
           const SchedulerConfig& config, const Clock& clock, SchedulerMetrics& metrics,
           KvEventLog* kv_events, std::function<void(const RequestState&)> on_dequeued,
           std::function<void()> wake);

  // Queues a validated request.
  void Add(std::shared_ptr<RequestState> request);
  // Queues a document compression.
  void AddCompression(std::unique_ptr<cache_store::DocumentCompressor> compressor,
                      std::shared_ptr<CompressionChannel> channel);
  // One step. An error (a failed forward pass) has already ended the requests it touched.
  [[nodiscard]] absl::StatusOr<StepReport> Step();
  // Whether a step would do anything: not when every running sequence waits for a mask that is
  // not ready (and nothing waits, compresses or was cancelled).
  bool HasWork() const;
  // Ends every request and compression with `status`.
  void FailAll(const absl::Status& status);

  const engine::KvBlockPool& pool() const { return *pool_; }

 private:
  struct Scheduled {
    Sequence* sequence;
    int32_t count;                         // tokens computed this step
    engine::StepScores* scores = nullptr;  // what KeepKV collects in the step, if anything
  };

  void DropCancelled();
  // Admission, from here to ReleaseKv (step_admission.cc).
  void ScheduleRunning(int32_t& budget, std::vector<Scheduled>& scheduled, StepReport& report);
  void AdmitWaiting(int32_t& budget, std::vector<Scheduled>& scheduled, StepReport& report);
  // Shares the cache of the candidate's document, loading it if needed. False when the pool
  // cannot hold it now; a document that can never load fails the request.
  bool AttachDocument(Sequence& candidate);
  // Shares the longest cached prefix of a fresh candidate's tokens (prefix cache); a KeepKV
  // candidate protects it, as it does a document.
  void AttachPrefix(Sequence& candidate);
  // Blocks of idle documents and idle cached prefixes: free to take.
  int64_t IdleBlocks() const;
  // Frees idle documents, then idle cached prefix blocks, until `blocks` blocks are free, and
  // frees none of them when that cannot reach it; running sequences' draft caches go first
  // when the idle blocks alone do not reach it and they do. Returns whether they are free.
  bool MakeRoom(int64_t blocks);
  // Frees idle documents, then idle cached prefix blocks, until `blocks` blocks are free or
  // nothing idle is left, then draft caches if that makes the room: room for compressions,
  // which reserve their blocks as they go.
  void FreeIdle(int64_t blocks);
  // Returns a sequence's blocks to the pool (its cached prefix blocks stay cached) and marks it
  // as having computed nothing.
  void ReleaseKv(Sequence& sequence);
  // Rebuilds the KeepKV sequences whose refresh is due from their full KV, room permitting.
  void RefreshKeepKv();
  [[nodiscard]] absl::Status RunForward(std::span<Scheduled> scheduled,
                                        std::span<const engine::SequenceStep> compression,
                                        StepReport& report);
  void ProcessOutputs(std::span<const Scheduled> scheduled, absl::Time now);
  // KeepKV's bookkeeping and compaction after the step. False when the sequence's request
  // failed (now, adding it to `failed` and its status to `error`, or earlier in this step).
  bool AfterKeepKvStep(const Scheduled& item, std::vector<std::shared_ptr<RequestState>>& failed,
                       absl::Status& error);
  // Branches the pending completions off `parent`, sharing its KV blocks, and samples their
  // first tokens from the step's logit row `logits_row`.
  [[nodiscard]] absl::Status Fork(Sequence& parent, int32_t logits_row, absl::Time now);
  // Samples the next token from the step's logit row `logits_row` (its top logits, or the whole
  // row when they leave the draw open; kSavedRow: the row a deferred sample saved, in
  // whole_row_), emits it, and retires the sequence if it finished. A constrained sequence
  // whose mask is not ready saves the row and samples when it is (SampleDeferred). Fails only
  // when the whole row cannot be read back or the constraint refuses.
  // `first_of_step`: no token of the sequence came out of this step before (the later ones of
  // verified drafts record no inter-token latency, as one step's tokens arrive together).
  // `proposal`: the draft at this position was drawn from a distribution (a draft model's),
  // and the token is sampled by speculative sampling (Sampler::SampleVerifying).
  struct DraftProposal {
    int32_t token;
    std::span<const float> probabilities;
  };
  enum class Sampled { kGoesOn, kFinished, kDeferred };
  static constexpr int32_t kSavedRow = -2;
  [[nodiscard]] absl::StatusOr<Sampled> SampleNext(
      Sequence& sequence, int32_t logits_row, absl::Time now, bool first_of_step = true,
      const std::optional<DraftProposal>& proposal = std::nullopt);
  // Samples the deferred draws whose masks are ready, before the step is planned; the others
  // sit the step out.
  void SampleDeferred(absl::Time now);
  // The next mask of `sequence` (after `token`, when given) starts on a constraint worker.
  void StartMask(Sequence& sequence, std::optional<int32_t> token);
  // Takes `sequence`'s ready mask: its time counts in the metrics and, as the tokens the
  // forward pass computes in that time, against the tenant's fair share.
  absl::StatusOr<std::shared_ptr<const structured::TokenMask>> TakeMask(Sequence& sequence);
  // Speculative decoding (step_speculation.cc). Sets `sequence.speculated` when the sequence
  // decodes and drafts within `budget` tokens, clears it otherwise.
  void Draft(Sequence& sequence, int32_t budget);
  // Whether the sequence decodes a token in the next step with nothing in its way of drafting
  // (a prompt to compute or score, pending forks, KeepKV, which edits its heads after each step).
  static bool CanDraft(const Sequence& sequence);
  // How many tokens the sequence may draft in a step that leaves it `budget` tokens; 0 when it
  // does not draft in this step. A sequence eligible for the first time starts in the longest
  // backoff while drafts are poor everywhere.
  int32_t DraftRoom(Sequence& sequence, int32_t budget);
  // After `sequence` verified `drafted` tokens and kept `kept`: its adaptive k and backoff.
  void AdaptDrafting(Sequence& sequence, int32_t drafted, int32_t kept) const;
  // Draft model (step_draft_model.cc): runs the draft model for the running sequences that
  // draft in this step, batched, filling their model_drafts: first what each one's draft cache
  // lacks of its verified tokens, then one token at a time. Takes only free blocks beyond the
  // watermark; a sequence short of them drops its draft cache.
  void DraftWithModel(int32_t budget);
  // Drops the draft cache's entries past the sequence's verified tokens.
  void TrimDraftKv(Sequence& sequence);
  // A fresh draft cache for `sequence`: sharing the draft model's cache of the document it
  // continues, computed once per document (when the pool has room) for all its questions.
  std::unique_ptr<engine::SequenceKv> NewDraftKv(const Sequence& sequence);
  // Returns every running sequence's draft cache and every document's to the pool (they are
  // recomputed as needed).
  void ReleaseDraftKvs();
  // Blocks that ReleaseDraftKvs would return: held by draft caches and nothing else.
  int64_t DraftOnlyBlocks() const;
  // The n-gram index of `document`, built on first use and shared while sequences hold it.
  std::shared_ptr<const DocumentNgrams> DocumentNgramsOf(const DocumentPrefix& document);
  // After a step that computed `sequence.speculated` (logit rows from `first_row`): samples at
  // each position while the draws confirm the drafts, emitting every draw, and drops the cache
  // entries of the drafts that were not kept.
  [[nodiscard]] absl::Status VerifyDrafts(Sequence& sequence, int32_t first_row, absl::Time now);
  // Whether the step computes a logit row for each of `sequence`'s tokens (its prompt is being
  // scored: prompt_logprobs).
  static bool ScoresPrompt(const Sequence& sequence);
  // Scores the prompt tokens that `rows` logit rows from `first_row` predict, the first row
  // being that of prompt position `first_position`.
  [[nodiscard]] absl::Status ScorePrompt(Sequence& sequence, int32_t first_position, int32_t rows,
                                         int32_t first_row);
  // Ends a sequence whose request only scores its prompt (max_tokens 0), with its logprobs.
  void FinishScoring(Sequence& sequence);

  void PublishGauges();
  void InsertRunning(std::unique_ptr<Sequence> sequence);
  std::unique_ptr<Sequence> TakeRunning(Sequence* sequence);
  void Preempt(std::unique_ptr<Sequence> sequence);
  // Ends a sequence that left running_ / waiting_: its finish event (unless `event_sent`), the
  // pending completions' events, its blocks, and the request's final event after its last.
  void Close(std::unique_ptr<Sequence> sequence, FinishReason reason, bool event_sent);
  void FinishRequest(RequestState& request, const absl::Status& status);
  // Ends the requests in `failed` with `status`, wherever their sequences are.
  void FailRequests(const std::vector<std::shared_ptr<RequestState>>& failed,
                    const absl::Status& status);

  std::unique_ptr<engine::SequenceKv> NewKv() const;
  std::unique_ptr<engine::Sampler> NewSampler(const Request& request, int32_t choice);
  // A constrained output for `request` (null without a constraint), its first mask started.
  std::shared_ptr<ConstrainedOutput> NewConstrained(const Request& request);
  std::unique_ptr<SequenceOutput> NewOutput(const Request& request, int32_t choice) const;
  // KeepKV for `request` (null without), whose first `shared_tokens` prompt tokens are shared.
  std::unique_ptr<cache_store::KeepKvSequence> NewKeepKv(const Request& request,
                                                         int32_t shared_tokens = 0) const;

  engine::Model& model_;
  engine::Model* const draft_model_;  // null unless a draft model drafts
  std::unique_ptr<engine::KvBlockPool> pool_;
  const text::Tokenizer* tokenizer_;
  const SchedulerConfig config_;
  const Clock& clock_;
  SchedulerMetrics& metrics_;
  const std::function<void(const RequestState&)> on_dequeued_;
  const int32_t watermark_blocks_;
  std::mt19937_64 seeds_;  // seeds for requests that set none

  ResidentDocuments documents_;
  KvEventLog* const kv_events_;                // null without KV events
  std::vector<KvEvent> step_events_;           // the prefix cache's events of the running step
  std::unique_ptr<PrefixCache> prefix_cache_;  // null when prefix caching is off
  CompressionJobs jobs_;
  // Shared by every sequence that a compression's blocks once preempted, until it ends: no new
  // compression starts while another holder exists, so a stream of uploads cannot preempt the
  // sequence again and again.
  std::shared_ptr<const bool> compressions_held_back_ = std::make_shared<const bool>(true);
  std::vector<std::unique_ptr<Sequence>> running_;  // in Sequence::order()
  FairQueue waiting_;
  // Forward-pass seconds per computed token, averaged over recent steps: what a constraint's
  // worker time is charged as.
  double seconds_per_token_ = 0.0;
  engine::LogitsRequest logits_request_;
  engine::StepLogits logits_;
  std::vector<float> whole_row_;  // the step's logit row whole_row_index_ (-1: none yet)
  int32_t whole_row_index_ = -1;
  std::vector<engine::StepScores> keepkv_scores_;  // one per scheduled sequence of the step
  engine::StepLogits draft_logits_;                // the draft model's last step
  // The draft model's cache of each document's tokens, by DocumentPrefix::key, while its
  // payload is held anywhere; sequences share its blocks.
  struct DraftDocument {
    std::weak_ptr<const cache_store::DocumentPayload> payload;
    std::unique_ptr<engine::SequenceKv> kv;
  };
  std::unordered_map<std::string, DraftDocument> draft_documents_;
  DraftAcceptance draft_acceptance_;
  // Each document's n-gram index, by DocumentPrefix::key, while its payload is held anywhere.
  struct DocumentIndex {
    std::weak_ptr<const cache_store::DocumentPayload> payload;
    std::shared_ptr<const DocumentNgrams> ngrams;
  };
  std::unordered_map<std::string, DocumentIndex> document_ngrams_;
  // Last, so that it stops (finishing the work it has) before anything above goes.
  ConstraintWorkers constraint_workers_;
};

}  // namespace kvd::scheduler::internal
