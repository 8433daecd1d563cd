// Token sampling from logits: penalties, logit bias, temperature, top-k, top-p, min-p, seeded
// randomness, and log-probabilities.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "engine/mass_selection.h"
#include "engine/top_logits.h"

namespace kvd::engine {

// What a sequence's tokens are drawn with. The numeric members' ranges and documentation are
// their rows of kSamplingFields (sampling_fields.h).
struct SamplingParams {
  float temperature = 1.0f;         // 0: greedy (argmax after penalties and bias)
  int32_t top_k = 0;                // the k most likely tokens; 0 or -1: all
  float top_p = 1.0f;               // nucleus: the smallest set with probability >= top_p
  float min_p = 0.0f;               // drops tokens below min_p times the top probability
  float repetition_penalty = 1.0f;  // on prompt and output tokens (divides positive logits)
  float presence_penalty = 0.0f;    // subtracted once per token present in the output
  float frequency_penalty = 0.0f;   // subtracted per occurrence in the output
  std::vector<std::pair<int32_t, float>> logit_bias;  // added to the logits, [-100, 100]
  std::optional<uint64_t> seed;                       // reproducible sampling when set
  bool logprobs = false;                              // report each sampled token's logprob
  int32_t top_logprobs = 0;  // alternatives reported per token (implies logprobs), [0, 20]

  [[nodiscard]] absl::Status Validate(int32_t vocab_size) const;
};

// The tokens a constraint allows next, as a bitset over the vocabulary: token t is bit t % 64 of
// words[t / 64]. No words: every token.
struct AllowedTokens {
  std::span<const uint64_t> words;

  bool constrained() const { return !words.empty(); }
  bool allows(int32_t token) const {
    return !constrained() || (token >= 0 && static_cast<size_t>(token / 64) < words.size() &&
                              ((words[token / 64] >> (token % 64)) & 1));
  }
};

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
};

struct SampledToken {
  int32_t token = 0;
  // Log-probability of `token` under the model's raw distribution (before penalties, bias and
  // temperature), as OpenAI reports it. Zero unless params.logprobs or top_logprobs.
  float logprob = 0.0f;
  std::vector<TokenLogprob> top_logprobs;  // the most likely tokens, most likely first
  // 1 + how many tokens are more likely than `token`, where it was counted (a scored prompt's
  // tokens); 0 otherwise.
  int32_t rank = 0;
};

// Samples the tokens of one sequence. Owns its random stream: with a seed, the same logits give
// the same tokens on every run.
class Sampler {
 public:
  // `fallback_seed` seeds the stream when params.seed is unset.
  Sampler(SamplingParams params, uint64_t fallback_seed);

  const SamplingParams& params() const { return params_; }

  // `context` is the prompt followed by the output so far; the last `output_count` entries are
  // the output. Logits must have the vocabulary's size. `banned` tokens are never chosen
  // (end-of-sequence before min_tokens), nor tokens `allowed` excludes (a constraint, applied
  // before top-k, top-p and min-p as vLLM applies its grammars); at least one token must remain.
  // Logprobs stay those of the model's raw distribution.
  SampledToken Sample(std::span<const float> logits, std::span<const int32_t> context,
                      size_t output_count, std::span<const int32_t> banned = {},
                      AllowedTokens allowed = {});
  // The distribution Sample draws from (after penalties, bias, bans, the constraint,
  // temperature, top-k, min-p and top-p), over the whole vocabulary: one-hot when greedy.
  std::vector<float> Probabilities(std::span<const float> logits, std::span<const int32_t> context,
                                   size_t output_count, std::span<const int32_t> banned = {},
                                   AllowedTokens allowed = {}) const;
  // A token drawn from `probabilities` (Probabilities of some row) with the sampler's stream.
  int32_t DrawFrom(std::span<const float> probabilities);
  // Speculative sampling: what Sample would give in distribution, with the draft token `draft`
  // that a draft model drew from `draft_probabilities` kept when the rule of AcceptOrResample
  // (speculative_sampling.h) keeps it. Takes one or two numbers of the sampler's stream.
  SampledToken SampleVerifying(std::span<const float> logits, std::span<const int32_t> context,
                               size_t output_count, std::span<const int32_t> banned,
                               AllowedTokens allowed, int32_t draft,
                               std::span<const float> draft_probabilities);
  // Samples from a row's top logits when they decide the token exactly as Sample would from
  // the whole row: no penalties or bias, and a greedy pick, or a draw whose top_k, min_p and
  // nucleus fall inside the top logits or that lands inside them. Otherwise nullopt, and when
  // a random number was drawn, the next Sample (from the whole row) draws with it again, so
  // that either way a sequence takes the same random stream. Under a constraint (`allowed`), a
  // greedy pick is decided when a top logit is allowed, a draw when top_k allowed tokens are
  // among the top logits (the constraint's share of the rest is unknown).
  std::optional<SampledToken> SampleFromTop(const TopLogits& top,
                                            std::span<const int32_t> banned = {},
                                            AllowedTokens allowed = {});
  // How many of a row's top logits SampleFromTop needs to decide the next token as often as it
  // can, with `banned` tokens and under a constraint or not: a greedy pick with no penalties, no
  // bias and no constraint, the first token not banned and top_logprobs alternatives; anything
  // else as many as a step returns (kernels::kMaxTopLogits), the more to decide from.
  int32_t TopLogitsToDecide(size_t banned, bool constrained) const;

 private:
  // Penalties or a bias move logits, so the top logits decide nothing.
  bool HasPenaltiesOrBias() const;
  void ApplyPenaltiesAndBias(std::vector<float>& logits, std::span<const int32_t> context,
                             size_t output_count) const;
  // The logits after penalties, bias, bans and the constraint.
  std::vector<float> Processed(std::span<const float> logits, std::span<const int32_t> context,
                               size_t output_count, std::span<const int32_t> banned,
                               AllowedTokens allowed) const;
  // The tokens a draw may take (top-k, min-p and top-p applied), in no particular order, and
  // their probabilities at the temperature (normalized before the min-p and top-p cuts, so
  // they sum to at most 1). A draw walks them most likely first (SelectByMass).
  struct Kept {
    std::vector<Candidate> candidates;
  };
  Kept Keep(const std::vector<float>& logits) const;
  int32_t Draw(const std::vector<float>& logits);
  // Logprobs of `result.token` and the most likely tokens under the whole raw row `logits`,
  // when the parameters ask for them.
  void AddLogprobs(std::span<const float> logits, SampledToken& result) const;
  // Draw's choice among `top` (no banned tokens, no penalties), when they decide it.
  std::optional<int32_t> DrawFromTop(const TopLogits& top);
  // Logprobs of `result.token` and the most likely tokens, when the parameters ask for them.
  void AddTopLogprobs(const TopLogits& top, SampledToken& result) const;
  double NextUniform();

  SamplingParams params_;
  std::mt19937_64 random_;
  std::optional<double> pending_uniform_;  // drawn by SampleFromTop for a draw it left undecided
};

}  // namespace kvd::engine
