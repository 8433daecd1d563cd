// Merge instead of evict, for documents: each document entry a cut drops folds into the kept
// entry of the same (layer, kv head) whose key is closest in direction, weighted by attention
// mass (an entry's KVzip score times its vote p, so folded entries carry their votes):
//   k_t' = (m_t k_t + sum m_e k_e) / M,  v_t' likewise,  ln p_t' = ln p_t + ln(M / m_t)
// with m = score * p and M = m_t + sum m_e. An entry of score 0 has no mass and changes
// nothing; the fold does not depend on the order the entries are dropped in.
#pragma once

#include <cstdint>
#include <vector>

#include "cache_store/store/document_payload.h"

namespace kvd::cache_store {

// Smallest cosine between a dropped entry's key and its target's for the fold: an entry with
// no kept key this close is dropped, not folded. The vote boost is right only for keys that
// every query weighs alike; on the bundled model's QA, lower gates (0, 0.5, 0.8, 0.9) lost 1–6
// points to eviction at kept 0.05 and 0.1 (docs/benchmarks.md).
inline constexpr float kMinFoldCosine = 0.95f;

// `head` with the held entries `keep` marks (one flag per held entry) and, folded into them,
// those it does not. Entries before `prefix` (the template, kept in every cut) neither fold nor
// take folds; a dropped entry whose score is 0 or not finite, or with no kept document entry of
// positive score whose key is within kMinFoldCosine, is dropped. Scores are unchanged.
HeadKv FoldDroppedEntries(const HeadKv& head, const std::vector<bool>& keep, int32_t prefix,
                          int32_t head_dim);

}  // namespace kvd::cache_store
