#include "engine/rope.h"

#include <cmath>
#include <numbers>

namespace kvd::engine {

std::vector<float> RopeInverseFrequencies(const ModelConfig& config) {
  const int32_t half = config.head_dim / 2;
  std::vector<float> inv_freq(half);
  for (int32_t i = 0; i < half; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(config.head_dim);
    inv_freq[i] = 1.0f / std::pow(config.rope_theta, exponent);
  }
  if (!config.has_llama3_rope_scaling) return inv_freq;

  const Llama3RopeScaling& scaling = config.llama3_rope_scaling;
  const double old_context = scaling.original_max_position_embeddings;
  const double low_freq_wavelen = old_context / scaling.low_freq_factor;
  const double high_freq_wavelen = old_context / scaling.high_freq_factor;
  for (float& frequency : inv_freq) {
    const double wavelen = 2.0 * std::numbers::pi / frequency;
    if (wavelen > low_freq_wavelen) {
      frequency = static_cast<float>(frequency / scaling.factor);
    } else if (wavelen >= high_freq_wavelen) {
      const double smooth = (old_context / wavelen - scaling.low_freq_factor) /
                            (scaling.high_freq_factor - scaling.low_freq_factor);
      frequency =
          static_cast<float>((1.0 - smooth) * frequency / scaling.factor + smooth * frequency);
    }
  }
  return inv_freq;
}

}  // namespace kvd::engine
