#include "engine/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "engine/mass_selection.h"
#include "engine/sampling_fields.h"
#include "engine/speculative_sampling.h"
#include "kernels/backend.h"

namespace kvd::engine {
namespace {

// log-softmax of `logits`, in double for accuracy.
std::vector<float> LogSoftmax(std::span<const float> logits) {
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  double total = 0.0;
  for (float logit : logits) total += std::exp(double{logit} - max_logit);
  const double log_total = std::log(total) + max_logit;
  std::vector<float> out(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = static_cast<float>(logits[i] - log_total);
  return out;
}

// How close a draw or a nucleus cut may come to a boundary between tokens and still be taken
// from the top logits when their total is approximate (past them, from the backend's float
// normalizer, good to ~1e-6): closer calls go to the whole row.
constexpr double kUndecidedMargin = 1e-5;

int32_t ArgMax(const std::vector<float>& values) {
  return static_cast<int32_t>(std::max_element(values.begin(), values.end()) - values.begin());
}

}  // namespace

absl::Status SamplingParams::Validate(int32_t vocab_size) const {
  auto invalid = [](auto&&... parts) { return absl::InvalidArgumentError(absl::StrCat(parts...)); };
  for (const SamplingField& field : kSamplingFields) {
    KVD_RETURN_IF_ERROR(CheckSamplingField(field, *this));
  }
  for (const auto& [token, bias] : logit_bias) {
    if (token < 0 || token >= vocab_size) {
      return invalid("logit_bias token ", token, " is outside the vocabulary of ", vocab_size);
    }
    if (!(bias >= -100.0f && bias <= 100.0f)) {
      return invalid("logit_bias values must be in [-100, 100]");
    }
  }
  if (top_logprobs < 0 || top_logprobs > 20) return invalid("top_logprobs must be in [0, 20]");
  return absl::OkStatus();
}

Sampler::Sampler(SamplingParams params, uint64_t fallback_seed)
    : params_(std::move(params)), random_(params_.seed.value_or(fallback_seed)) {}

bool Sampler::HasPenaltiesOrBias() const {
  return params_.repetition_penalty != 1.0f || params_.presence_penalty != 0.0f ||
         params_.frequency_penalty != 0.0f || !params_.logit_bias.empty();
}

int32_t Sampler::TopLogitsToDecide(size_t banned, bool constrained) const {
  if (params_.temperature != 0.0f || constrained || HasPenaltiesOrBias()) {
    return kernels::kMaxTopLogits;
  }
  const size_t needed = std::max<size_t>(banned + 1, static_cast<size_t>(params_.top_logprobs));
  return static_cast<int32_t>(std::min<size_t>(needed, kernels::kMaxTopLogits));
}

void Sampler::ApplyPenaltiesAndBias(std::vector<float>& logits, std::span<const int32_t> context,
                                    size_t output_count) const {
  const int32_t vocab = static_cast<int32_t>(logits.size());
  if (params_.repetition_penalty != 1.0f) {
    std::vector<bool> seen(logits.size(), false);
    for (int32_t token : context) {
      if (token < 0 || token >= vocab || seen[token]) continue;
      seen[token] = true;
      float& logit = logits[token];
      logit =
          logit > 0.0f ? logit / params_.repetition_penalty : logit * params_.repetition_penalty;
    }
  }
  if (params_.presence_penalty != 0.0f || params_.frequency_penalty != 0.0f) {
    absl::flat_hash_map<int32_t, int32_t> counts;
    for (int32_t token : context.last(output_count)) {
      if (token >= 0 && token < vocab) ++counts[token];
    }
    for (const auto& [token, count] : counts) {
      logits[token] -= params_.presence_penalty + params_.frequency_penalty * count;
    }
  }
  for (const auto& [token, bias] : params_.logit_bias) logits[token] += bias;
}

double Sampler::NextUniform() {
  if (pending_uniform_) return *std::exchange(pending_uniform_, std::nullopt);
  // 53 random bits: the same value for the same seed with any standard library.
  return static_cast<double>(random_() >> 11) * (1.0 / 9007199254740992.0);
}

Sampler::Kept Sampler::Keep(const std::vector<float>& logits) const {
  const int32_t vocab = static_cast<int32_t>(logits.size());
  Kept kept;
  std::vector<Candidate>& candidates = kept.candidates;
  // Banned and excluded tokens never take the draw's rounding remainder.
  for (int32_t id = 0; id < vocab; ++id) {
    if (logits[id] != -std::numeric_limits<float>::infinity()) {
      candidates.push_back({logits[id], id, 0.0});
    }
  }
  if (candidates.empty()) candidates.push_back({logits[0], 0, 0.0});  // nothing possible
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < candidates.size()) {
    std::nth_element(candidates.begin(), candidates.begin() + params_.top_k - 1, candidates.end(),
                     MoreLikely);
    candidates.resize(params_.top_k);
  }
  const Candidate& most_likely =
      *std::min_element(candidates.begin(), candidates.end(), MoreLikely);
  const double max_logit = most_likely.logit;
  const double inv_temperature = 1.0 / params_.temperature;
  double total = 0.0;
  for (Candidate& candidate : candidates) {
    candidate.probability = std::exp((candidate.logit - max_logit) * inv_temperature);
    total += candidate.probability;
  }
  for (Candidate& candidate : candidates) candidate.probability /= total;
  if (params_.min_p > 0.0f) {
    // The most likely token's probability is 1 / total; it always stays.
    const double threshold = params_.min_p / total;
    std::erase_if(candidates, [&](const Candidate& c) {
      return c.probability < threshold && c.logit != max_logit;
    });
  }
  if (params_.top_p < 1.0f) {
    // The fewest most likely tokens whose probabilities reach top_p.
    const size_t last = SelectByMass(candidates, params_.top_p, /*inclusive=*/true);
    candidates.resize(last + 1);
  }
  return kept;
}

int32_t Sampler::Draw(const std::vector<float>& logits) {
  Kept kept = Keep(logits);
  double kept_total = 0.0;
  for (const Candidate& candidate : kept.candidates) kept_total += candidate.probability;
  const double target = NextUniform() * kept_total;
  return kept.candidates[SelectByMass(kept.candidates, target)].id;
}

std::optional<int32_t> Sampler::DrawFromTop(const TopLogits& top) {
  const int32_t candidates = static_cast<int32_t>(top.values.size());
  int32_t keep = top.vocab_size;
  if (params_.top_k > 0 && params_.top_k < top.vocab_size) {
    if (params_.top_k > candidates) return std::nullopt;
    keep = params_.top_k;
  }
  // Whether the kept tokens, as far as known, reach past the top logits; all beyond them are
  // at most as likely as the last of them.
  bool past_top = keep > candidates;
  int32_t kept = std::min(keep, candidates);
  std::vector<double> probs(kept);
  const double max_logit = top.values[0];
  const double inv_temperature = 1.0 / params_.temperature;
  double total = 0.0;
  for (int32_t i = 0; i < kept; ++i) {
    probs[i] = std::exp((top.values[i] - max_logit) * inv_temperature);
    total += probs[i];
  }
  // Past the top logits the total comes from the tempered normalizer, a float summed on the
  // backend: within ~1e-6 of the whole row's sum, which the draw must not depend on.
  const bool approximate_total = past_top;
  if (approximate_total) {
    total = std::exp(double{top.tempered_log_normalizer});
    if (!std::isfinite(total) || total < 1.0) return std::nullopt;
  }
  for (double& p : probs) p /= total;
  bool min_p_undecided = false;  // the min_p cut may lie past the top logits
  if (params_.min_p > 0.0f) {
    const double threshold = params_.min_p * probs[0];
    if (past_top && probs[kept - 1] < threshold) past_top = false;  // so is all beyond
    if (past_top) {
      min_p_undecided = true;
    } else {
      while (kept > 1 && probs[kept - 1] < threshold) --kept;
    }
  }
  if (params_.top_p < 1.0f) {
    double cumulative = 0.0;
    for (int32_t i = 0; i < kept; ++i) {
      cumulative += probs[i];
      if (cumulative >= params_.top_p) {
        // Too close to call with an approximate total: leave the cut to the whole row.
        if (approximate_total && (cumulative - params_.top_p < kUndecidedMargin ||
                                  params_.top_p - (cumulative - probs[i]) < kUndecidedMargin)) {
          return std::nullopt;
        }
        kept = i + 1;
        past_top = false;
        min_p_undecided = false;
        break;
      }
    }
    if (past_top) return std::nullopt;  // the nucleus reaches past the top logits
  }
  if (min_p_undecided) return std::nullopt;
  // Past the top logits nothing was cut: the kept probabilities are the whole distribution.
  const double kept_total =
      past_top ? 1.0 : std::accumulate(probs.begin(), probs.begin() + kept, 0.0);
  // Once a cut falls inside the top logits, only their ratios matter and the total cancels.
  const double uniform = NextUniform();
  double target = uniform * kept_total;
  for (int32_t i = 0; i < kept; ++i) {
    target -= probs[i];
    if (target >= 0.0) continue;
    if (past_top && (-target < kUndecidedMargin || target + probs[i] < kUndecidedMargin)) break;
    return top.ids[i];
  }
  if (!past_top) return top.ids[kept - 1];
  pending_uniform_ = uniform;  // the draw lands past the top logits, or too close to call
  return std::nullopt;
}

void Sampler::AddTopLogprobs(const TopLogits& top, SampledToken& result) const {
  if (!params_.logprobs && params_.top_logprobs == 0) return;
  auto logprob = [&](size_t i) {
    return static_cast<float>(double{top.values[i]} - double{top.values[0]} -
                              double{top.log_normalizer});
  };
  for (size_t i = 0; i < top.ids.size(); ++i) {
    if (top.ids[i] == result.token) result.logprob = logprob(i);
  }
  const size_t count = std::min<size_t>(params_.top_logprobs, top.ids.size());
  for (size_t i = 0; i < count; ++i) result.top_logprobs.push_back({top.ids[i], logprob(i)});
}

std::optional<SampledToken> Sampler::SampleFromTop(const TopLogits& top,
                                                   std::span<const int32_t> banned,
                                                   AllowedTokens allowed) {
  const size_t candidates = top.ids.size();
  if (HasPenaltiesOrBias() || candidates == 0 ||
      std::min<size_t>(params_.top_logprobs, top.vocab_size) > candidates) {
    return std::nullopt;
  }
  const auto is_banned = [&banned](int32_t token) {
    return std::find(banned.begin(), banned.end(), token) != banned.end();
  };
  SampledToken result;
  if (allowed.constrained()) {
    // The allowed top logits are the most likely allowed tokens, in order.
    std::vector<float> values;
    std::vector<int32_t> ids;
    for (size_t i = 0; i < candidates; ++i) {
      if (allowed.allows(top.ids[i]) && !is_banned(top.ids[i])) {
        values.push_back(top.values[i]);
        ids.push_back(top.ids[i]);
      }
    }
    if (ids.empty()) return std::nullopt;
    if (params_.temperature == 0.0f) {
      result.token = ids[0];
    } else {
      if (params_.top_k <= 0 || static_cast<size_t>(params_.top_k) > ids.size()) {
        return std::nullopt;
      }
      const std::optional<int32_t> token =
          DrawFromTop({.values = values, .ids = ids, .vocab_size = top.vocab_size});
      if (!token) return std::nullopt;
      result.token = *token;
    }
  } else if (params_.temperature == 0.0f) {
    // The most likely token not banned; ties go to the lower id, as the top logits order them.
    size_t i = 0;
    while (i < candidates && is_banned(top.ids[i])) ++i;
    if (i == candidates) return std::nullopt;
    result.token = top.ids[i];
  } else {
    if (!banned.empty()) return std::nullopt;  // their share of the tail is unknown
    const std::optional<int32_t> token = DrawFromTop(top);
    if (!token) return std::nullopt;
    result.token = *token;
  }
  AddTopLogprobs(top, result);
  return result;
}

std::vector<float> Sampler::Processed(std::span<const float> logits,
                                      std::span<const int32_t> context, size_t output_count,
                                      std::span<const int32_t> banned,
                                      AllowedTokens allowed) const {
  std::vector<float> processed(logits.begin(), logits.end());
  ApplyPenaltiesAndBias(processed, context, output_count);
  for (int32_t token : banned) {
    if (token >= 0 && token < static_cast<int32_t>(processed.size())) {
      processed[token] = -std::numeric_limits<float>::infinity();
    }
  }
  if (allowed.constrained()) {
    for (size_t token = 0; token < processed.size(); ++token) {
      if (!allowed.allows(static_cast<int32_t>(token))) {
        processed[token] = -std::numeric_limits<float>::infinity();
      }
    }
  }
  return processed;
}

void Sampler::AddLogprobs(std::span<const float> logits, SampledToken& result) const {
  if (!params_.logprobs && params_.top_logprobs == 0) return;
  const std::vector<float> logprobs = LogSoftmax(logits);
  result.logprob = logprobs[result.token];
  if (params_.top_logprobs > 0) {
    const int32_t count =
        std::min<int32_t>(params_.top_logprobs, static_cast<int32_t>(logprobs.size()));
    std::vector<int32_t> order(logprobs.size());
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + count, order.end(), [&](int32_t a, int32_t b) {
      return logprobs[a] > logprobs[b] || (logprobs[a] == logprobs[b] && a < b);
    });
    for (int32_t i = 0; i < count; ++i)
      result.top_logprobs.push_back({order[i], logprobs[order[i]]});
  }
}

SampledToken Sampler::Sample(std::span<const float> logits, std::span<const int32_t> context,
                             size_t output_count, std::span<const int32_t> banned,
                             AllowedTokens allowed) {
  const std::vector<float> processed = Processed(logits, context, output_count, banned, allowed);
  SampledToken result;
  result.token = params_.temperature == 0.0f ? ArgMax(processed) : Draw(processed);
  AddLogprobs(logits, result);
  return result;
}

std::vector<float> Sampler::Probabilities(std::span<const float> logits,
                                          std::span<const int32_t> context, size_t output_count,
                                          std::span<const int32_t> banned,
                                          AllowedTokens allowed) const {
  const std::vector<float> processed = Processed(logits, context, output_count, banned, allowed);
  std::vector<float> probabilities(processed.size(), 0.0f);
  if (params_.temperature == 0.0f) {
    probabilities[ArgMax(processed)] = 1.0f;
    return probabilities;
  }
  const Kept kept = Keep(processed);
  double kept_total = 0.0;
  for (const Candidate& candidate : kept.candidates) kept_total += candidate.probability;
  for (const Candidate& candidate : kept.candidates) {
    probabilities[candidate.id] = static_cast<float>(candidate.probability / kept_total);
  }
  return probabilities;
}

int32_t Sampler::DrawFrom(std::span<const float> probabilities) {
  const double total = std::accumulate(probabilities.begin(), probabilities.end(), 0.0);
  return DrawFromDistribution(probabilities, NextUniform() * total);
}

SampledToken Sampler::SampleVerifying(std::span<const float> logits,
                                      std::span<const int32_t> context, size_t output_count,
                                      std::span<const int32_t> banned, AllowedTokens allowed,
                                      int32_t draft, std::span<const float> draft_probabilities) {
  const std::vector<float> target = Probabilities(logits, context, output_count, banned, allowed);
  SampledToken result;
  result.token =
      AcceptOrResample(target, draft_probabilities, draft, [this] { return NextUniform(); });
  AddLogprobs(logits, result);
  return result;
}

}  // namespace kvd::engine
