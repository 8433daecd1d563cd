// A document's compressed KV cache as plain host data: what the store persists and what the
// engine loads into shared, read-only blocks. Keys are after RoPE (kernels/kv_layout.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace kvd::cache_store {

// The kept entries of one (layer, kv head), in original position order, and the importance
// score of every entry of the uncompressed cache, kept or not, so a later re-cut can keep a
// different fraction without rescoring.
struct HeadKv {
  std::vector<float> keys;         // [kept * head_dim], after RoPE
  std::vector<float> values;       // [kept * head_dim]
  std::vector<float> log_votes;    // [kept], ln p per entry; 0 for an unmerged token
  std::vector<int32_t> positions;  // [kept], strictly increasing, in [0, original_length)
  std::vector<float> scores;       // [original_length], scores[p] is position p's importance

  int32_t kept() const { return static_cast<int32_t>(positions.size()); }
  bool operator==(const HeadKv&) const = default;
};

// The precision the store keeps a payload's keys and values in (kv_storage.h): as computed, or
// bf16 or int8 for a fraction of the bytes, with log-votes in bf16 and the kept entries'
// scores in f16.
enum class KvStorage : uint8_t { kF32 = 0, kBf16 = 1, kInt8 = 2 };

struct DocumentPayload {
  // Every key, value, log-vote and score below is exactly representable in this precision
  // (RoundForStorage made it so), so the stored form decodes to this payload unchanged.
  KvStorage storage = KvStorage::kF32;
  int32_t num_layers = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  // Tokens of the uncompressed cache; the next appended token takes this position.
  int32_t original_length = 0;
  // The text and token ids the cache was prefilled from (system prefix, template, document);
  // at most original_length ids.
  std::string prefix_text;
  std::vector<int32_t> prefix_token_ids;
  // [num_layers * num_kv_heads], layer-major: head(layer, kv_head).
  std::vector<HeadKv> heads;

  HeadKv& head(int32_t layer, int32_t kv_head) { return heads[Index(layer, kv_head)]; }
  const HeadKv& head(int32_t layer, int32_t kv_head) const { return heads[Index(layer, kv_head)]; }
  // Kept entries summed over every (layer, kv head).
  int64_t kept_entries() const;

  // InvalidArgument naming the first inconsistency: a geometry that is not positive, array
  // sizes that disagree, positions out of order or out of range, keys, values or log-votes
  // that are not finite, NaN scores.
  [[nodiscard]] absl::Status Validate() const;

  bool operator==(const DocumentPayload&) const = default;

 private:
  size_t Index(int32_t layer, int32_t kv_head) const {
    return static_cast<size_t>(layer) * num_kv_heads + kv_head;
  }
};

}  // namespace kvd::cache_store
