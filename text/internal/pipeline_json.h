// Reads the text pipeline of a tokenizer.json (normalizer, pre_tokenizer, decoder) into the step
// lists the tokenizer builds its parts from, refusing types and options kvd does not implement.
#pragma once

#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "text/internal/normalizer.h"
#include "text/internal/pretokenize.h"
#include "text/internal/token_decoder.h"
#include "text/internal/tokenizer_json_reader.h"

namespace kvd::text::internal {

// The "normalizer" member of `root` (absent or null: none).
[[nodiscard]] absl::Status ParseNormalizer(const JsonReader& r, const nlohmann::json& root,
                                           std::vector<NormalizerStep>* steps);

// The "pre_tokenizer" member of `root`. Sets `*byte_level` when it ends with ByteLevel, whose
// byte mapping the model then applies.
[[nodiscard]] absl::Status ParsePreTokenizer(const JsonReader& r, const nlohmann::json& root,
                                             std::vector<PreTokenizerStep>* steps,
                                             bool* byte_level);

// The "decoder" member of `root`, which must be present.
[[nodiscard]] absl::Status ParseDecoder(const JsonReader& r, const nlohmann::json& root,
                                        std::vector<DecoderStep>* steps);

}  // namespace kvd::text::internal
