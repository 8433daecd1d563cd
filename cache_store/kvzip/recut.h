// Re-cutting a stored document cache to keep fewer entries, from the scores stored with it:
// no model work. The method's own selection rule runs over the entries the cache still holds.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "cache_store/kvzip/compression_spec.h"
#include "cache_store/store/document_payload.h"

namespace kvd::cache_store {

// Document tokens of a payload: its positions after the always-kept prefix (the entries whose
// score is infinite).
int32_t DocumentTokens(const DocumentPayload& payload);
// Document entries a payload holds over all (layer, kv head), the prefix excluded.
int64_t DocumentEntries(const DocumentPayload& payload);

// A copy of `source` that keeps `keep` of its document entries, chosen by `method`'s rule over
// the stored scores; the prefix stays. With `merge`, the entries not kept fold into the kept
// ones (entry_folding.h) instead of leaving, and the result is rounded to the payload's
// storage precision (a re-cut of a merged cut folds what the first cut kept, so it can differ
// from a fresh cut at its ratio in contents, never in which entries it keeps). InvalidArgument when
// `keep` exceeds what `source` holds (a larger cut needs the full cache), when the method is none,
// or when the scores are not those of a compressed cache.
[[nodiscard]] absl::StatusOr<DocumentPayload> CutPayload(const DocumentPayload& source,
                                                         CompressionMethod method, int64_t keep,
                                                         bool merge = false);

}  // namespace kvd::cache_store
