// A prompt token's log-probability read from the logit row of the position before it (vLLM's
// prompt_logprobs, OpenAI's echo with logprobs): from the row's top logits when the token is
// among them, from the whole row otherwise.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/sampling.h"
#include "engine/top_logits.h"

namespace kvd::scheduler::internal {

// `token`'s logprob and rank under `top`'s row at temperature 1, with the row's `alternatives`
// most likely tokens (at most top's count). `whole_row` fills a vector with the row's logits; it is
// called only when `token` is not among the top logits.
[[nodiscard]] absl::StatusOr<engine::SampledToken> PromptTokenLogprob(
    const engine::TopLogits& top, int32_t token, int32_t alternatives,
    const std::function<absl::Status(std::vector<float>&)>& whole_row);

}  // namespace kvd::scheduler::internal
