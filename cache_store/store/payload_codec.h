// The byte format of a stored DocumentPayload: magic, format version, body length, body and a
// SHA-256 of everything before it. Decoding validates all of it, so a truncated, flipped or
// inconsistent value is refused rather than loaded as a wrong cache.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "cache_store/store/document_meta.h"
#include "cache_store/store/document_payload.h"

namespace kvd::cache_store {

// Format 1 keeps f32 keys, values, log-votes and scores; format 2 the compact precisions of
// KvStorage kBf16 and kInt8 (internal/compact_heads.h). Both are read.
inline constexpr uint32_t kPayloadFormatVersion = 1;
inline constexpr uint32_t kCompactPayloadFormatVersion = 2;

// Format 1 for an f32 payload, format 2 otherwise. InvalidArgument when the payload fails
// DocumentPayload::Validate.
[[nodiscard]] absl::StatusOr<std::string> EncodePayload(const DocumentPayload& payload);

// DataLoss with a message saying what is wrong (truncated, bad magic, unsupported version,
// checksum mismatch, inconsistent contents); never crashes on any input.
[[nodiscard]] absl::StatusOr<DocumentPayload> DecodePayload(std::string_view bytes);

// The bytes a document's payload is stored as, with `meta`'s stored_bytes, kept_entries and
// storage set from them: what every store writes. InvalidArgument when either fails validation.
[[nodiscard]] absl::StatusOr<std::string> SealDocument(DocumentMeta& meta,
                                                       const DocumentPayload& payload);

}  // namespace kvd::cache_store
