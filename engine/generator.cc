#include "engine/generator.h"

#include <algorithm>
#include <memory>
#include <random>

#include "absl/strings/str_cat.h"

namespace kvd::engine {
namespace {

struct ActiveSequence {
  std::unique_ptr<SequenceKv> kv;
  std::unique_ptr<Sampler> sampler;
  std::vector<int32_t> context;  // prompt, then output
  std::vector<int32_t> stop_tokens;
  int32_t generated = 0;
  bool finished = false;
};

// The tokens that end this request's sequence: end-of-sequence ids (unless ignored) and its
// stop ids.
std::vector<int32_t> StopTokens(const GenerationRequest& request, const ModelConfig& config) {
  std::vector<int32_t> stops = request.stop_token_ids;
  if (!request.ignore_eos) {
    stops.insert(stops.end(), config.eos_token_ids.begin(), config.eos_token_ids.end());
  }
  return stops;
}

}  // namespace

absl::Status Generator::Run(std::span<const GenerationRequest> requests,
                            const std::function<bool(const GenerationEvent&)>& on_token) {
  const ModelConfig& config = model_.config();
  std::vector<ActiveSequence> sequences(requests.size());
  // Every exit path returns the sequences' blocks to the pool.
  auto release = [&] {
    for (auto& sequence : sequences) {
      if (sequence.kv) sequence.kv->Release(pool_);
    }
  };
  std::random_device entropy;
  for (size_t i = 0; i < requests.size(); ++i) {
    const GenerationRequest& request = requests[i];
    if (request.prompt.empty()) return absl::InvalidArgumentError("prompt is empty");
    if (request.max_tokens < 0) return absl::InvalidArgumentError("max_tokens must be >= 0");
    const int64_t needed = static_cast<int64_t>(request.prompt.size()) + request.max_tokens;
    if (needed > config.max_position_embeddings) {
      return absl::InvalidArgumentError(absl::StrCat(
          "prompt of ", request.prompt.size(), " tokens plus max_tokens ", request.max_tokens,
          " exceeds the model's context of ", config.max_position_embeddings, " tokens"));
    }
    if (auto status = request.sampling.Validate(config.vocab_size); !status.ok()) return status;
    const uint64_t fallback_seed = (uint64_t{entropy()} << 32) | entropy();
    sequences[i].kv = std::make_unique<SequenceKv>(config.num_layers, config.num_kv_heads);
    sequences[i].sampler = std::make_unique<Sampler>(request.sampling, fallback_seed);
    sequences[i].context = request.prompt;
    sequences[i].stop_tokens = StopTokens(request, config);
    sequences[i].finished = request.max_tokens == 0;
  }

  StepLogits logits;
  bool first_step = true;
  while (true) {
    std::vector<SequenceStep> steps;
    std::vector<size_t> stepped;
    for (size_t i = 0; i < sequences.size(); ++i) {
      ActiveSequence& sequence = sequences[i];
      if (sequence.finished) continue;
      const std::span<const int32_t> tokens =
          first_step ? std::span<const int32_t>(sequence.context)
                     : std::span<const int32_t>(sequence.context).last(1);
      if (auto status = sequence.kv->Reserve(pool_, static_cast<int32_t>(tokens.size()));
          !status.ok()) {
        release();
        return status;
      }
      steps.push_back(SequenceStep{sequence.kv.get(), tokens, LogitRows::kLast});
      stepped.push_back(i);
    }
    first_step = false;
    if (steps.empty()) break;
    if (auto status = model_.Forward(steps, pool_, logits); !status.ok()) {
      release();
      return status;
    }
    for (size_t row = 0; row < stepped.size(); ++row) {
      const size_t index = stepped[row];
      ActiveSequence& sequence = sequences[index];
      const GenerationRequest& request = requests[index];
      GenerationEvent event;
      event.sequence = index;
      // Before min_tokens, stop tokens cannot be sampled at all.
      const bool may_stop = sequence.generated >= request.min_tokens;
      event.sampled = sequence.sampler->Sample(
          logits.row(static_cast<int32_t>(row)), sequence.context, sequence.generated,
          may_stop ? std::span<const int32_t>() : std::span<const int32_t>(sequence.stop_tokens));
      sequence.context.push_back(event.sampled.token);
      ++sequence.generated;
      if (std::find(sequence.stop_tokens.begin(), sequence.stop_tokens.end(),
                    event.sampled.token) != sequence.stop_tokens.end()) {
        event.finished = true;
        event.finish_reason = FinishReason::kStop;
      } else if (sequence.generated >= request.max_tokens) {
        event.finished = true;
        event.finish_reason = FinishReason::kLength;
      }
      sequence.finished = event.finished;
      if (!on_token(event)) sequence.finished = true;
    }
  }
  release();
  return absl::OkStatus();
}

}  // namespace kvd::engine
