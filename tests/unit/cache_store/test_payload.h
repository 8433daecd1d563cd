// A small, deterministic document payload, identity and meta for the store tests.
#pragma once

#include <cstdint>
#include <random>

#include "cache_store/store/cache_identity.h"
#include "cache_store/store/document_meta.h"
#include "cache_store/store/document_payload.h"

namespace kvd::cache_store::testing {

inline DocumentPayload SmallPayload(uint32_t seed = 1, int32_t num_layers = 2,
                                    int32_t num_kv_heads = 2, int32_t head_dim = 4,
                                    int32_t original_length = 6) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  DocumentPayload payload;
  payload.num_layers = num_layers;
  payload.num_kv_heads = num_kv_heads;
  payload.head_dim = head_dim;
  payload.original_length = original_length;
  payload.prefix_text = "Document: the tide comes in twice a day.";
  for (int32_t i = 0; i < original_length; ++i) payload.prefix_token_ids.push_back(100 + i);
  payload.heads.resize(static_cast<size_t>(num_layers) * num_kv_heads);
  int32_t index = 0;
  for (HeadKv& head : payload.heads) {
    // Heads keep different counts, one keeps nothing, as a joint budget allows.
    const int32_t kept = index++ % original_length;
    for (int32_t p = 0; p < kept; ++p) {
      head.positions.push_back(p * original_length / (kept + 1));
    }
    for (size_t i = 1; i < head.positions.size(); ++i) {
      if (head.positions[i] <= head.positions[i - 1]) head.positions[i] = head.positions[i - 1] + 1;
    }
    for (int32_t e = 0; e < kept * head_dim; ++e) {
      head.keys.push_back(uniform(random));
      head.values.push_back(uniform(random));
    }
    for (int32_t e = 0; e < kept; ++e) head.log_votes.push_back(0.5f * uniform(random));
    for (int32_t p = 0; p < original_length; ++p) head.scores.push_back(uniform(random) + 1.0f);
  }
  return payload;
}

inline CacheIdentity TestIdentity() {
  CacheIdentity identity;
  identity.model_digest = "model-sha";
  identity.tokenizer_digest = "tokenizer-sha";
  identity.kv_dtype = "f32";
  identity.method = "kvzip";
  identity.method_version = "1";
  identity.ratio = 0.3;
  return identity;
}

// A ready document's meta of TestIdentity(), with a little client metadata.
inline DocumentMeta TestMeta(const std::string& tenant, const std::string& id) {
  DocumentMeta meta;
  meta.id = id;
  meta.tenant = tenant;
  meta.status = DocumentStatus::kReady;
  meta.created = absl::FromUnixSeconds(1'700'000'000);
  meta.token_count = 6;
  meta.metadata = {{"title", "tides"}, {"pages", 3}};
  meta.identity = TestIdentity();
  return meta;
}

}  // namespace kvd::cache_store::testing
