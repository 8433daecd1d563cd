// Reads a Hugging Face tokenizer.json describing a BPE tokenizer into plain structs, checking its
// shape and rejecting the features kvd does not implement. Cross-checks that need the vocabulary
// (merges, added token ids) happen when the parts are built.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "text/internal/added_tokens.h"
#include "text/internal/bpe_model.h"
#include "text/internal/normalizer.h"
#include "text/internal/pretokenize.h"
#include "text/internal/token_decoder.h"

namespace kvd::text::internal {

struct TokenizerSpec {
  BpeModelConfig model;
  std::vector<AddedToken> added_tokens;
  std::vector<NormalizerStep> normalizer;
  // Applied in order before the byte-level mapping (which the BPE model does).
  std::vector<PreTokenizerStep> pre_tokenizer;
  std::vector<DecoderStep> decoder;
  // Ids the post-processor puts around the encoded text when special tokens are added.
  std::vector<int32_t> template_prefix;
  std::vector<int32_t> template_suffix;
};

// Errors name `source_name` and the JSON path at fault. InvalidArgument: not JSON, or fields
// missing, mistyped or inconsistent. Unimplemented: a valid file using a model, normalizer,
// pre-tokenizer, decoder or post-processor type (or option) that kvd does not support.
[[nodiscard]] absl::StatusOr<TokenizerSpec> ParseTokenizerJson(std::string_view json,
                                                               std::string_view source_name);

}  // namespace kvd::text::internal
