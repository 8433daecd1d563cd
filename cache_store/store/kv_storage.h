// Stored caches at a fraction of the bytes: rounds a payload's keys and values to bf16 or to
// int8 (each entry's key and value its own bf16 scale), its log-votes to bf16 and its kept
// entries' scores to f16 (the others, never read, to 0), in place, so that what is served from
// memory is exactly what the store decodes.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "cache_store/store/document_payload.h"

namespace kvd::cache_store {

// "f32", "bf16", "int8"; and back (InvalidArgument otherwise).
const char* KvStorageName(KvStorage storage);
[[nodiscard]] absl::StatusOr<KvStorage> ParseKvStorage(std::string_view name);

// The int8 code of one entry's vector: scale (bf16 bits) and codes, with x ≈ code * scale.
// The scale is max|x| / 127 rounded to bf16, so a vector already rounded by it maps to the
// same scale and codes again. A zero (or vanishing) vector has scale 0.
uint16_t Int8Scale(const float* x, int32_t n);
void Int8Codes(const float* x, int32_t n, uint16_t scale_bits, int8_t* codes);
float Int8Value(int8_t code, uint16_t scale_bits);

// A score as `storage` keeps it: itself for kF32; otherwise f16, finite scores clamped to
// f16's largest (an infinite score marks an always-kept prefix entry and stays infinite).
float StoredScore(KvStorage storage, float score);

// Rounds every key, value, log-vote and kept entry's score of `payload` to `storage`, sets the
// scores of positions no entry holds to 0, and sets payload.storage. Idempotent; with kF32 it
// changes nothing but the field.
void RoundForStorage(KvStorage storage, DocumentPayload& payload);

}  // namespace kvd::cache_store
