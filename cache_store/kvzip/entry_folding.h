// Merge instead of evict, for documents: each document entry a cut drops folds into the kept
// entry of the same (layer, kv head), among the nearest kept entries by position, whose key is
// closest in direction, weighted by attention mass (an entry's KVzip score times its vote p, so
// folded entries carry their votes):
//   k_t' = (m_t k_t + sum m_e k_e) / M,  v_t' likewise,  ln p_t' = ln p_t + ln(M / m_t)
// with m = score * p and M = m_t + sum m_e, computed from log masses so no vote overflows. An
// entry of score zero changes nothing; the fold does not depend on the order of the drops.
#pragma once

#include <cstdint>
#include <vector>

#include "cache_store/store/document_payload.h"

namespace kvd::cache_store {

// Smallest cosine between a dropped entry's key and its target's for the fold: an entry with
// no candidate this close is dropped, not folded. The vote boost is right only for keys that
// every query weighs alike; on the bundled model's QA, lower gates (0, 0.5, 0.8, 0.9) lost 1–6
// points to eviction at kept 0.05 and 0.1, and no gate 10 and 6 points at 0.02 and 0.03, where
// eviction itself loses most (docs/benchmarks.md).
inline constexpr float kMinFoldCosine = 0.95f;
// Kept entries on each side of a dropped one, by position, that are its candidate targets: the
// fold costs O(entries × candidates × head_dim), linear in the document's length.
inline constexpr int32_t kFoldCandidatesPerSide = 16;
// The rule above as a cache identity names it: bump with any change to it.
inline constexpr char kFoldVersion[] = "fold/1 cosine>=0.95 candidates=16+16 mass=score*vote";

// `head` with the held entries `keep` marks (one flag per held entry) and, folded into them,
// those it does not. Entries before `prefix` (the template, kept in every cut) neither fold nor
// take folds; a dropped entry whose score is 0 or not finite, or with no kept candidate of
// positive score within kMinFoldCosine, is dropped; a target whose folded vote would not be a
// finite float stays as it was. Scores are unchanged.
HeadKv FoldDroppedEntries(const HeadKv& head, const std::vector<bool>& keep, int32_t prefix,
                          int32_t head_dim);

}  // namespace kvd::cache_store
