// KVzip's context-independent mode: one importance per (layer, kv head), measured once per model
// from sample texts (the highest KVzip score the head gives any document entry, averaged over
// the samples) and kept as a small JSON file bound to the model's weights. An upload with
// method kvzip_heads keeps its most important heads whole and costs one prefill, no scoring.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cache_store/store/document_payload.h"

namespace kvd::cache_store {

struct HeadProfile {
  // engine::CacheFingerprint of the profiled model and of the tokenizer, template and document
  // prompts the samples were scored under.
  std::string model_digest;
  std::string tokenizer_digest;
  int32_t num_layers = 0;
  int32_t num_kv_heads = 0;
  int32_t samples = 0;            // sample texts averaged
  int64_t sample_tokens = 0;      // their document tokens, all together
  std::vector<float> importance;  // per (layer, kv head), layer-major; in [0, 1]

  // InvalidArgument naming the first problem: no samples, a shape that is not positive, an
  // importance count other than layers × kv heads, or an importance outside [0, 1] (each is a
  // mean of attention probabilities).
  [[nodiscard]] absl::Status Validate() const;
  // Lowercase hex SHA-256 of the encoded profile: part of a kvzip_heads cache's identity.
  std::string Digest() const;

  bool operator==(const HeadProfile&) const = default;
};

// Per (layer, kv head), layer-major: the highest score `payload` gives a document entry (the
// prefix's infinite scores skipped). The payload is a KVzip cache scored at ratio 1.
std::vector<float> MaxScorePerHead(const DocumentPayload& payload);

// The profile of `per_sample` (each MaxScorePerHead of one sample): their mean per head.
// InvalidArgument when it is empty or a sample has another number of heads.
[[nodiscard]] absl::StatusOr<HeadProfile> AverageHeadMaxima(
    std::string model_digest, std::string tokenizer_digest, int32_t num_layers,
    int32_t num_kv_heads, const std::vector<std::vector<float>>& per_sample, int64_t sample_tokens);

// The profile as canonical JSON (the same profile always gives the same bytes), and back:
// InvalidArgument for anything malformed, of another format, with unknown members, or failing
// Validate.
std::string EncodeHeadProfile(const HeadProfile& profile);
[[nodiscard]] absl::StatusOr<HeadProfile> DecodeHeadProfile(std::string_view json);

}  // namespace kvd::cache_store
