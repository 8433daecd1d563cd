// Speculative sampling (Leviathan et al. 2023, Chen et al. 2023): how a token drafted by a
// smaller model is kept or replaced so that the token that comes out follows the target
// model's distribution exactly, whatever the draft model's.
#pragma once

#include <cstdint>
#include <span>

#include "absl/functional/function_ref.h"

namespace kvd::engine {

// The first token at which the cumulative sum of `probabilities` (weights, not necessarily
// normalized) exceeds `point` in [0, their sum); the last token of nonzero weight when rounding
// leaves `point` past the sum.
int32_t DrawFromDistribution(std::span<const float> probabilities, double point);

// Keeps `draft`, drawn from `draft_probabilities` (q), with probability min(1, p(d) / q(d)) under
// the target distribution `target` (p); otherwise draws from the residual max(0, p - q),
// normalized. The result is distributed as p. `uniform` gives numbers in [0, 1): one for the
// test, one more for a replacement. Both spans cover the vocabulary; a draft whose q is not
// finite and positive is no proposal (the token is drawn from p).
int32_t AcceptOrResample(std::span<const float> target, std::span<const float> draft_probabilities,
                         int32_t draft, absl::FunctionRef<double()> uniform);

}  // namespace kvd::engine
