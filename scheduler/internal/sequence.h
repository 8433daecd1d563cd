// The scheduler thread's state of a submitted request and of each of its sequences (one per
// completion). Thread: scheduler.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "absl/time/time.h"
#include "cache_store/keepkv/keepkv_sequence.h"
#include "engine/kv_cache.h"
#include "engine/sampling.h"
#include "scheduler/internal/constrained_output.h"
#include "scheduler/internal/ngram_drafter.h"
#include "scheduler/internal/prefix_cache.h"
#include "scheduler/internal/request_channel.h"
#include "scheduler/internal/sequence_output.h"
#include "scheduler/request.h"

namespace kvd::scheduler::internal {

struct RequestState {
  Request request;
  std::shared_ptr<RequestChannel> channel;
  absl::Time arrival;
  int64_t arrival_order = 0;  // submission order, for FIFO and preemption order
  int32_t open_choices = 0;   // choices not finished yet
  int32_t completion_tokens = 0;
  int32_t prefix_cached_tokens = 0;  // prompt tokens shared from the prefix cache at admission
  // With request.prompt_logprobs: by prompt position from 1, filled as the prompt is computed.
  std::vector<engine::SampledToken> prompt_logprobs;
  bool admitted = false;  // has left the queue once (no longer counts as queued)
  bool produced_token = false;
  bool done = false;  // final event sent
};

struct Sequence {
  std::shared_ptr<RequestState> request;
  int32_t choice = 0;
  // Choices still to branch off this one when its prompt is computed: the prompt's blocks are
  // then shared by all n completions.
  int32_t pending_forks = 0;
  std::unique_ptr<engine::SequenceKv> kv;
  std::unique_ptr<engine::Sampler> sampler;
  std::unique_ptr<SequenceOutput> output;
  std::unique_ptr<cache_store::KeepKvSequence> keepkv;  // null without a KV budget
  // Its constraint's matcher and next mask, advanced by the constraint workers; null without
  // a constraint.
  std::shared_ptr<ConstrainedOutput> constrained;
  // The logit row of a sample that waits for its mask (empty when none waits): the sequence
  // computes nothing until the mask is ready and the token is drawn from this row.
  std::vector<float> deferred_logits;
  // Its place in the prefix cache's chains; none when it takes no part (no cache, a document,
  // a KeepKV budget).
  std::optional<PrefixChain> prefix;
  std::vector<int32_t> tokens;                          // prompt, then output
  // Speculative decoding: this step's input when it verifies drafts, the last sampled token
  // followed by the draft tokens; empty in a step without drafts.
  std::vector<int32_t> speculated;
  // Drafts refused whole in a row, and the steps still to decode without drafting: a sequence
  // whose drafts keep failing drafts ever more rarely (1 step in 2, 4, 8, 16).
  int32_t refused_drafts = 0;
  int32_t steps_without_drafts = 0;
  // Whether it has been eligible to draft before (a fresh one starts in the backoff while
  // drafts are poor everywhere, DraftAcceptance).
  bool drafting_started = false;
  // Adaptive k of a draft model: the most draft tokens of its next draft (0: the configured
  // count); after a draft kept whole it doubles, after one cut short it is the kept count plus
  // one.
  int32_t draft_limit = 0;
  // Where the n-grams of the document it continues occur, once it has drafted (shared).
  std::shared_ptr<const DocumentNgrams> document_ngrams;
  // Draft model: its cache of the sequence (the document's tokens, then `tokens`; no entries
  // past the verified ones between steps), its sampler, the drafts it made for this step and,
  // when the sequence samples, the distribution each was drawn from.
  std::unique_ptr<engine::SequenceKv> draft_kv;
  std::unique_ptr<engine::Sampler> draft_sampler;
  std::vector<int32_t> model_drafts;
  std::vector<std::vector<float>> draft_probabilities;
  int32_t generated = 0;                                // output tokens
  int32_t num_computed = 0;  // leading tokens whose keys and values are cached
  // Preempted alone, short of blocks a compression held: admitted again once compressions hold
  // none, so that it does not take them back while the compression still needs them; and,
  // until it ends, holding StepLoop's token that keeps new compressions from starting.
  bool waits_for_compressions = false;
  std::shared_ptr<const bool> holds_back_compressions;
  absl::Time last_token_time;

  const TenantPolicy& tenant() const { return request->request.tenant; }
  // Service order: better priority first, then earlier submission, then choice.
  std::tuple<int32_t, int64_t, int32_t> order() const {
    return {request->request.priority, request->arrival_order, choice};
  }
  bool awaits_mask() const { return !deferred_logits.empty(); }
  // Tokens the next step would compute for this sequence if the budget allowed.
  int32_t uncomputed() const { return static_cast<int32_t>(tokens.size()) - num_computed; }
  // Draft tokens this step verifies.
  int32_t num_drafts() const {
    return speculated.empty() ? 0 : static_cast<int32_t>(speculated.size()) - 1;
  }
};

}  // namespace kvd::scheduler::internal
