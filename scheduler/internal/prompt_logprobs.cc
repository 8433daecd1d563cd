#include "scheduler/internal/prompt_logprobs.h"

#include <algorithm>

#include "base/check.h"

namespace kvd::scheduler::internal {

absl::StatusOr<engine::SampledToken> PromptTokenLogprob(
    const engine::TopLogits& top, int32_t token, int32_t alternatives,
    const std::function<absl::Status(std::vector<float>&)>& whole_row) {
  KVD_CHECK(!top.values.empty());
  // log p(t) = logit(t) − log Σ exp(logit), the normalizer taken relative to the largest logit.
  const auto logprob = [&](double logit) {
    return static_cast<float>(logit - double{top.values[0]} - double{top.log_normalizer});
  };
  engine::SampledToken result{.token = token};
  const auto found = std::find(top.ids.begin(), top.ids.end(), token);
  if (found != top.ids.end()) {
    const float value = top.values[found - top.ids.begin()];
    result.logprob = logprob(value);
    result.rank = 1 + static_cast<int32_t>(std::count_if(top.values.begin(), top.values.end(),
                                                         [&](float v) { return v > value; }));
  } else {
    std::vector<float> row;
    if (absl::Status status = whole_row(row); !status.ok()) return status;
    if (token < 0 || token >= static_cast<int32_t>(row.size())) {
      return absl::OutOfRangeError("a prompt token outside the logit row");
    }
    result.logprob = logprob(row[token]);
    result.rank = 1 + static_cast<int32_t>(std::count_if(row.begin(), row.end(),
                                                         [&](float v) { return v > row[token]; }));
  }
  const size_t count = std::min<size_t>(std::max(alternatives, 0), top.ids.size());
  for (size_t i = 0; i < count; ++i)
    result.top_logprobs.push_back({top.ids[i], logprob(top.values[i])});
  return result;
}

}  // namespace kvd::scheduler::internal
