#include "scheduler/internal/sequence_output.h"

#include <algorithm>

namespace kvd::scheduler::internal {

SequenceOutput::SequenceOutput(const Request& request, int32_t choice,
                               std::vector<int32_t> stop_tokens, const text::Tokenizer* tokenizer)
    : choice_(choice),
      max_tokens_(request.max_tokens),
      min_tokens_(request.min_tokens),
      report_logprobs_(request.sampling.logprobs || request.sampling.top_logprobs > 0),
      stop_tokens_(std::move(stop_tokens)),
      stop_strings_(request.stop),
      stop_string_values_(request.stop) {
  if (tokenizer != nullptr) decoder_.emplace(*tokenizer, request.skip_special_tokens);
}

std::span<const int32_t> SequenceOutput::Banned(int32_t generated) const {
  if (generated >= min_tokens_) return {};
  return stop_tokens_;
}

std::string SequenceOutput::DecodeText(int32_t token) {
  if (!decoder_) return {};
  // An id past the tokenizer's vocabulary (padding rows of the LM head) has no text.
  auto text = decoder_->Push(token);
  return text.ok() ? *std::move(text) : std::string();
}

std::string SequenceOutput::FlushText() {
  std::string text = decoder_ ? decoder_->Flush() : std::string();
  const StopStringMatcher::Result result = stop_strings_.Push(text, /*match=*/false);
  return result.released;
}

Event SequenceOutput::Accept(const engine::SampledToken& sampled, int32_t generated) {
  Event event;
  event.index = choice_;
  event.token_ids.push_back(sampled.token);
  if (report_logprobs_) event.logprobs.push_back(sampled);
  const bool may_stop = generated >= min_tokens_;
  if (may_stop &&
      std::find(stop_tokens_.begin(), stop_tokens_.end(), sampled.token) != stop_tokens_.end()) {
    // The stop token's own text is not part of the output.
    event.text = FlushText();
    event.finish_reason = FinishReason::kStop;
    event.stop_token = sampled.token;
    return event;
  }
  StopStringMatcher::Result result = stop_strings_.Push(DecodeText(sampled.token), may_stop);
  event.text = std::move(result.released);
  if (result.matched) {
    event.finish_reason = FinishReason::kStop;
    event.stop_string = stop_string_values_[*result.matched];
  } else if (generated >= max_tokens_) {
    event.text += FlushText();
    event.finish_reason = FinishReason::kLength;
  }
  return event;
}

Event SequenceOutput::Finish(FinishReason reason) {
  Event event;
  event.index = choice_;
  if (reason != FinishReason::kAbort) event.text = FlushText();
  event.finish_reason = reason;
  return event;
}

}  // namespace kvd::scheduler::internal
