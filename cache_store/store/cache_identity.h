// What a stored document cache may be reused with: the same model, tokenizer, KV dtype and
// compression method at the same ratio. Any difference means the cache is refused.
#pragma once

#include <string>

namespace kvd::cache_store {

struct CacheIdentity {
  std::string model_digest;      // SHA-256 (hex) of the model weights and config
  std::string tokenizer_digest;  // SHA-256 (hex) of the tokenizer and chat template
  std::string kv_dtype;          // dtype the KV was computed in, e.g. "f32", "bf16"
  std::string method;            // compression method name, e.g. "kvzip"
  std::string method_version;    // prompts, chunk size, softmax dtype: bumped on any change
  double ratio = 1.0;            // fraction of entries kept, in (0, 1]

  // Lowercase hex SHA-256 of a canonical, length-prefixed encoding of every field. Stable
  // across processes, builds and machines (never a process-seeded hash).
  std::string Fingerprint() const;

  // Name of the first field that differs from `other` ("model_digest", ..., "ratio"), or an
  // empty string when the identities are equal. Ratios compare exactly.
  std::string FirstDifference(const CacheIdentity& other) const;

  bool operator==(const CacheIdentity&) const = default;
};

}  // namespace kvd::cache_store
