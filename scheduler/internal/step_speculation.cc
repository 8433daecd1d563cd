// StepLoop's speculative decoding: the drafts a decoding sequence carries into a step, and
// their verification after it. A draft token is kept when the token the sequence's sampler
// draws at its position (from the step's logits, with the sequence's own random stream,
// penalties and constraint) is that token; the first draw that differs is kept instead and
// ends the run, and the cache entries of the drafts after it are dropped. Since every kept token
// is the draw decoding one token per step would have made, the output is unchanged, token for
// token, greedy or sampled. A draft a draft model drew from its distribution is kept or replaced
// by speculative sampling instead, so that the output follows the model's distribution.
#include <algorithm>

#include "base/check.h"
#include "scheduler/internal/ngram_drafter.h"
#include "scheduler/internal/step_loop.h"

namespace kvd::scheduler::internal {
namespace {

// After this many drafts refused in a row, a sequence drafts once in 2^4 steps at most.
constexpr int32_t kMaxDraftBackoffShift = 4;

NgramLookup LookupOf(const SpeculativeConfig& speculative) {
  return {.min_n = speculative.prompt_lookup_min, .max_n = speculative.prompt_lookup_max};
}

}  // namespace

std::shared_ptr<const DocumentNgrams> StepLoop::DocumentNgramsOf(const DocumentPrefix& document) {
  DocumentIndex& cached = document_ngrams_[document.key];
  if (cached.ngrams != nullptr && cached.payload.lock() == document.payload) return cached.ngrams;
  cached = {.payload = document.payload,
            .ngrams = std::make_shared<const DocumentNgrams>(document.payload->prefix_token_ids,
                                                             LookupOf(config_.speculative))};
  std::shared_ptr<const DocumentNgrams> built = cached.ngrams;
  // An index lasts as long as its document's payload is held anywhere (a request, the pool, the
  // documents' memory tier), so the questions that follow each other reuse it.
  std::erase_if(document_ngrams_, [](const auto& entry) { return entry.second.payload.expired(); });
  return built;
}

bool StepLoop::CanDraft(const Sequence& sequence) {
  return sequence.uncomputed() == 1 && sequence.generated > 0 && sequence.keepkv == nullptr &&
         sequence.pending_forks == 0 && !ScoresPrompt(sequence);
}

int32_t StepLoop::DraftRoom(Sequence& sequence, int32_t budget) {
  const SpeculativeConfig& speculative = config_.speculative;
  if (speculative.method == SpeculativeMethod::kNone || !CanDraft(sequence)) return 0;
  if (!sequence.drafting_started) {
    sequence.drafting_started = true;
    if (draft_acceptance_.Poor()) {
      sequence.refused_drafts = kMaxDraftBackoffShift + 1;
      sequence.steps_without_drafts = (1 << kMaxDraftBackoffShift) - 1;
    }
  }
  if (sequence.steps_without_drafts > 0 ||
      (speculative.disable_by_batch_size > 0 &&
       std::ssize(running_) > speculative.disable_by_batch_size)) {
    return 0;
  }
  const Request& request = sequence.request->request;
  // Every verified position may emit a token: no more than max_tokens in all.
  const int32_t limit =
      sequence.draft_limit > 0 ? sequence.draft_limit : speculative.num_speculative_tokens;
  return std::max(
      0, std::min({request.num_speculative_tokens.value_or(speculative.num_speculative_tokens),
                   limit, budget - 1, request.max_tokens - sequence.generated - 1}));
}

void StepLoop::AdaptDrafting(Sequence& sequence, int32_t drafted, int32_t kept) const {
  // A draft model pays a pass per draft token; n-gram drafts cost nothing to make, and one
  // cut short says little about the next.
  if (config_.speculative.method == SpeculativeMethod::kDraftModel) {
    sequence.draft_limit = kept == drafted
                               ? std::min(config_.speculative.num_speculative_tokens, 2 * drafted)
                               : kept + 1;
  }
  sequence.refused_drafts = kept == 0 ? sequence.refused_drafts + 1 : 0;
  sequence.steps_without_drafts =
      (1 << std::clamp(sequence.refused_drafts - 1, 0, kMaxDraftBackoffShift)) - 1;
}

void StepLoop::Draft(Sequence& sequence, int32_t budget) {
  sequence.speculated.clear();
  std::vector<int32_t> drafts = std::exchange(sequence.model_drafts, {});
  std::vector<std::vector<float>> probabilities = std::exchange(sequence.draft_probabilities, {});
  const int32_t room = DraftRoom(sequence, budget);
  if (room == 0) {
    if (sequence.steps_without_drafts > 0 && CanDraft(sequence)) --sequence.steps_without_drafts;
    return;
  }
  const SpeculativeConfig& speculative = config_.speculative;
  if (speculative.method == SpeculativeMethod::kNgram) {
    const Request& request = sequence.request->request;
    if (request.document && sequence.document_ngrams == nullptr) {
      sequence.document_ngrams = DocumentNgramsOf(*request.document);
    }
    drafts = ProposeNgramDraft(sequence.tokens, sequence.document_ngrams.get(),
                               LookupOf(speculative), room);
  }
  // A stored document's ids are the model's, unless the payload says otherwise: a draft ends
  // before any id the model does not have.
  const int32_t vocab_size = model_.config().vocab_size;
  drafts.erase(std::find_if(drafts.begin(), drafts.end(),
                            [&](int32_t id) { return id < 0 || id >= vocab_size; }),
               drafts.end());
  if (drafts.size() > static_cast<size_t>(room)) drafts.resize(room);
  if (drafts.empty()) return;
  if (probabilities.size() > drafts.size()) probabilities.resize(drafts.size());
  sequence.draft_probabilities = std::move(probabilities);
  sequence.speculated.reserve(drafts.size() + 1);
  sequence.speculated.push_back(sequence.tokens.back());
  sequence.speculated.insert(sequence.speculated.end(), drafts.begin(), drafts.end());
}

absl::Status StepLoop::VerifyDrafts(Sequence& sequence, int32_t first_row, absl::Time now) {
  const std::vector<int32_t> drafts(sequence.speculated.begin() + 1, sequence.speculated.end());
  // Drawn from a draft model's distribution (a sampling sequence's): kept or replaced by
  // speculative sampling. Otherwise a draft is kept when the draw is that token.
  const std::vector<std::vector<float>> probabilities =
      std::exchange(sequence.draft_probabilities, {});
  sequence.speculated.clear();
  sequence.num_computed += 1;  // the last sampled token's entries are the sequence's
  int32_t accepted = 0;
  for (size_t i = 0; i <= drafts.size(); ++i) {
    // As in a step without drafts, the blocks the computed tokens fill join the prefix cache
    // before the draw, which may end the sequence: every entry below num_computed is verified.
    if (sequence.prefix) {
      prefix_cache_->Publish(sequence.tokens, sequence.num_computed, *sequence.prefix,
                             *sequence.kv);
    }
    std::optional<DraftProposal> proposal;
    if (i < probabilities.size()) proposal = DraftProposal{drafts[i], probabilities[i]};
    absl::StatusOr<Sampled> sampled = SampleNext(sequence, first_row + static_cast<int32_t>(i), now,
                                                 /*first_of_step=*/i == 0, proposal);
    if (!sampled.ok()) return sampled.status();
    if (*sampled == Sampled::kFinished) {  // its blocks are gone already
      metrics_.RecordSpeculation(static_cast<int32_t>(drafts.size()), accepted);
      draft_acceptance_.Record(std::ssize(drafts), accepted);
      return absl::OkStatus();
    }
    if (*sampled == Sampled::kDeferred) {
      // Its mask was not ready: the drafts from here on are dropped, and this position's draw
      // waits for the mask (without the draft's proposal: a plain draw from the model).
      metrics_.RecordSpeculation(static_cast<int32_t>(drafts.size()), accepted);
      draft_acceptance_.Record(std::ssize(drafts), accepted);
      KVD_CHECK(sequence.uncomputed() == 0);
      return sequence.kv->DropLast(*pool_, static_cast<int32_t>(drafts.size()) - accepted);
    }
    if (i == drafts.size() || sequence.tokens.back() != drafts[i]) break;
    ++accepted;
    sequence.num_computed += 1;
  }
  metrics_.RecordSpeculation(static_cast<int32_t>(drafts.size()), accepted);
  draft_acceptance_.Record(std::ssize(drafts), accepted);
  AdaptDrafting(sequence, static_cast<int32_t>(drafts.size()), accepted);
  KVD_CHECK(sequence.uncomputed() == 1);
  // The refused drafts' entries lie after every published block.
  return sequence.kv->DropLast(*pool_, static_cast<int32_t>(drafts.size()) - accepted);
}

}  // namespace kvd::scheduler::internal
