// What a stored document cache was computed with, as digests: the model (config and weights)
// and the text pipeline (tokenizer, chat template, how a document is framed). A cache is
// reused only where both match (cache_store/store/cache_identity.h).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kvd::engine {

struct CacheFingerprint {
  std::string model_digest;
  std::string tokenizer_digest;
};

// SHA-256 digests, lower-case hex. The model digest covers config.json whole and, for every
// *.safetensors file in name order, its name, size, header (names, dtypes, shapes, offsets)
// and 16 windows of 64 KiB spread evenly over the data: weights of the same shapes from
// another training run differ in every window, while a multi-gigabyte checkpoint is not read
// in full at each start. The tokenizer digest covers tokenizer.json, tokenizer_config.json
// (the chat template) and `framing_parts`, each length-prefixed (how documents are framed and
// scored: cache_store's DocumentFraming::IdentityParts). IO errors name the file.
[[nodiscard]] absl::StatusOr<CacheFingerprint> FingerprintModel(
    const std::filesystem::path& model_dir, const std::vector<std::string>& framing_parts);

}  // namespace kvd::engine
