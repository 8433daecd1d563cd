// Which document entries a compressed cache keeps, from per-entry importance scores: KVzip's
// joint top fraction over every (layer, kv head), and the baselines' per-head rules.
#pragma once

#include <cstdint>
#include <vector>

#include "cache_store/kvzip/compression_spec.h"

namespace kvd::cache_store {

// Per (layer, kv head), layer-major: the score of each document position (0 = the document's
// first token; the template prefix before it is always kept and not scored here).
using HeadScores = std::vector<std::vector<float>>;
// Per (layer, kv head): the kept document positions, ascending.
using HeadSelection = std::vector<std::vector<int32_t>>;

// The `keep` highest scores over all heads together, so heads and layers keep different
// numbers of entries (zero allowed). Ties go to the lower head, then the earlier position.
HeadSelection SelectJointTop(const HeadScores& scores, int64_t keep);

// `keep` spread evenly over the heads (the first heads take the remainder), each keeping its
// highest scores.
HeadSelection SelectPerHeadTop(const HeadScores& scores, int64_t keep);

// Each head's share as in SelectPerHeadTop, of which half (rounded down) goes to the most
// recent positions and the rest to the highest scores among the older ones (H2O's heavy
// hitters and recent window).
HeadSelection SelectHeavyAndRecent(const HeadScores& scores, int64_t keep);

// Each head's share as in SelectPerHeadTop, all of it the most recent positions (StreamingLLM;
// the always-kept prefix plays the attention sinks).
HeadSelection SelectRecent(const HeadScores& scores, int64_t keep);

// KVzip's context-independent rule: an eighth of `keep` spread evenly over the heads as their
// most recent positions (local context in every head while the eighth reaches them all, as
// DuoAttention's streaming heads keep it),
// the rest to the heads in importance order (a head's importance: its highest score, as a
// profile scores every position of a head alike; ties to the lower head), each filled with its
// most recent positions up to the whole head before the next. Positions scored -infinity are
// not held and never chosen.
HeadSelection SelectByHeadImportance(const HeadScores& scores, int64_t keep);

// Each score replaced by the maximum over the `kernel` positions centred on it (SnapKV's
// pooling, which keeps neighbours of important tokens so kept spans stay readable).
std::vector<float> MaxPool(const std::vector<float>& scores, int32_t kernel);

// The method's rule: kvzip joint, kvzip_heads by head importance, snapkv pooled per head, h2o heavy
// and recent, streaming recent, none everything.
HeadSelection SelectEntries(CompressionMethod method, const HeadScores& scores, int64_t keep);

}  // namespace kvd::cache_store
