// A logit row as a step can return it without the whole row: its largest logits, most likely
// first, and the row's log-normalizers over the whole vocabulary relative to its largest logit
// (values[0]), which decide most draws exactly (Sampler::SampleFromTop).
#pragma once

#include <cstdint>
#include <span>

namespace kvd::engine {

struct TopLogits {
  std::span<const float> values;  // most likely first; equal values: lower id first
  std::span<const int32_t> ids;
  float log_normalizer = 0.0f;           // log Σ exp(logit − values[0]) over the vocabulary
  float tempered_log_normalizer = 0.0f;  // log Σ exp((logit − values[0]) / T), T the row's
  int32_t vocab_size = 0;
};

}  // namespace kvd::engine
