// Rotary position embedding frequencies, including Llama 3 frequency scaling.
#pragma once

#include <vector>

#include "engine/model_config.h"

namespace kvd::engine {

// inv_freq[i] = 1 / theta^(2i / head_dim) for i < head_dim / 2, rescaled per rope_scaling, as
// Hugging Face computes them.
std::vector<float> RopeInverseFrequencies(const ModelConfig& config);

}  // namespace kvd::engine
