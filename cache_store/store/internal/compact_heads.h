// The body of one (layer, kv head) in a compact payload (format 2): positions as deltas,
// keys and values in bf16 or int8 with a bf16 scale per entry, log-votes in bf16, the kept
// entries' scores in f16 (every other position's score is 0). Values are written exactly as RoundForStorage left them, so decoding gives them back.
#pragma once

#include <cstdint>

#include "cache_store/store/document_payload.h"
#include "cache_store/store/internal/byte_io.h"

namespace kvd::cache_store::internal {

// `head` must already be rounded to `storage` (kBf16 or kInt8).
void PutCompactHead(ByteWriter& out, const HeadKv& head, KvStorage storage, int32_t head_dim);

// False when the input is truncated, a kept count or position is out of range, or an entry is
// not in the one form PutCompactHead writes; the caller validates the rest (finiteness,
// order) with DocumentPayload::Validate.
[[nodiscard]] bool GetCompactHead(ByteReader& in, KvStorage storage, int32_t head_dim,
                                  int32_t original_length, HeadKv& head);

}  // namespace kvd::cache_store::internal
