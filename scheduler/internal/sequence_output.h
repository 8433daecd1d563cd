// Turns one sequence's sampled tokens into its events: text through the incremental decoder,
// stop strings held back and cut, and the stop, min_tokens and max_tokens rules.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/sampling.h"
#include "scheduler/internal/stop_strings.h"
#include "scheduler/request.h"
#include "text/incremental_decoder.h"
#include "text/tokenizer.h"

namespace kvd::scheduler::internal {

class SequenceOutput {
 public:
  // `stop_tokens`: end-of-sequence ids (unless ignored) and the request's stop ids.
  // `tokenizer` is borrowed; null means no text.
  SequenceOutput(const Request& request, int32_t choice, std::vector<int32_t> stop_tokens,
                 const text::Tokenizer* tokenizer);

  // Tokens that may not be sampled when `generated` tokens exist: stop tokens before
  // min_tokens.
  std::span<const int32_t> Banned(int32_t generated) const;
  // Takes the sampled token, the `generated`-th of the sequence, and returns its event; the
  // event has finish_reason set when the sequence ends with it.
  Event Accept(const engine::SampledToken& sampled, int32_t generated);
  // Ends the sequence for a reason outside its tokens: releases held-back text.
  Event Finish(FinishReason reason);

 private:
  std::string DecodeText(int32_t token);
  std::string FlushText();

  const int32_t choice_;
  const int32_t max_tokens_;
  const int32_t min_tokens_;
  const bool report_logprobs_;
  const std::vector<int32_t> stop_tokens_;
  std::optional<text::IncrementalDecoder> decoder_;
  StopStringMatcher stop_strings_;
  std::vector<std::string> stop_string_values_;
};

}  // namespace kvd::scheduler::internal
