// Models derived from another for speculative decoding and its benchmarks, written as Hugging
// Face directories with the original's tokenizer:
// - a layer prefix: the first layers with the embedding, the final norm and the LM head, an
//   early-exit copy that drafts without training (self-speculative decoding);
// - a wider copy that computes the same function: each MLP padded with intermediate channels
//   whose weights are zero (they add exactly nothing), so that each token costs more; a stand-in
//   for a larger model with the same outputs, as the target of a prefix of the original.
#pragma once

#include <cstdint>
#include <filesystem>

#include "absl/status/status.h"

namespace kvd::engine {

// Writes to `to` (created if missing) the model of `from` cut to its first `layers` layers:
// config.json with num_hidden_layers = layers, one model.safetensors with the kept tensors as
// they are stored, and the tokenizer and generation files copied. InvalidArgument when `layers`
// is outside [1, the model's layers].
[[nodiscard]] absl::Status WriteLayerPrefixModel(const std::filesystem::path& from,
                                                 const std::filesystem::path& to, int32_t layers);

// Writes to `to` the model of `from` with intermediate_size multiplied by `factor`: gate and up
// projections padded with zero rows, down projections with zero columns, everything else as it
// is. InvalidArgument for a factor outside [1, 64] or MLP weights not F32, BF16 or F16.
[[nodiscard]] absl::Status WriteWiderMlpModel(const std::filesystem::path& from,
                                              const std::filesystem::path& to, int32_t factor);

}  // namespace kvd::engine
