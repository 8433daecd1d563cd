#include "cache_store/kvzip/recut.h"

#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cache_store/kvzip/entry_folding.h"
#include "cache_store/kvzip/selection.h"
#include "cache_store/store/kv_storage.h"

namespace kvd::cache_store {
namespace {

int32_t PrefixLength(const DocumentPayload& payload) {
  if (payload.heads.empty()) return 0;
  const std::vector<float>& scores = payload.heads.front().scores;
  int32_t prefix = 0;
  while (prefix < static_cast<int32_t>(scores.size()) && std::isinf(scores[prefix]) &&
         scores[prefix] > 0) {
    ++prefix;
  }
  return prefix;
}

// `head` with only the held entries `keep` marks; scores unchanged.
HeadKv KeptEntries(const HeadKv& head, const std::vector<bool>& keep, int32_t head_dim) {
  HeadKv cut;
  cut.scores = head.scores;
  const auto dim = static_cast<size_t>(head_dim);
  for (int32_t i = 0; i < head.kept(); ++i) {
    if (!keep[i]) continue;
    cut.positions.push_back(head.positions[i]);
    cut.log_votes.push_back(head.log_votes[i]);
    cut.keys.insert(cut.keys.end(), head.keys.begin() + i * dim, head.keys.begin() + (i + 1) * dim);
    cut.values.insert(cut.values.end(), head.values.begin() + i * dim,
                      head.values.begin() + (i + 1) * dim);
  }
  return cut;
}

}  // namespace

int32_t DocumentTokens(const DocumentPayload& payload) {
  return payload.original_length - PrefixLength(payload);
}

int64_t DocumentEntries(const DocumentPayload& payload) {
  const int32_t prefix = PrefixLength(payload);
  int64_t entries = 0;
  for (const HeadKv& head : payload.heads) entries += head.kept() - std::min(prefix, head.kept());
  return entries;
}

absl::StatusOr<DocumentPayload> CutPayload(const DocumentPayload& source, CompressionMethod method,
                                           int64_t keep, bool merge) {
  if (method == CompressionMethod::kNone) {
    return absl::InvalidArgumentError(
        "a cache compressed with method none has no scores to cut by");
  }
  const int32_t prefix = PrefixLength(source);
  const int64_t available = DocumentEntries(source);
  if (keep < 0 || keep > available) {
    return absl::InvalidArgumentError(
        absl::StrCat("the stored cache holds ", available, " document entries, fewer than the ",
                     keep, " asked for; a larger cut needs a document uploaded with keep_full"));
  }
  // Scores of the entries still held; the others can never be chosen.
  const int32_t document = source.original_length - prefix;
  constexpr float kDropped = -std::numeric_limits<float>::infinity();
  HeadScores scores(source.heads.size(), std::vector<float>(document, kDropped));
  for (size_t h = 0; h < source.heads.size(); ++h) {
    const HeadKv& head = source.heads[h];
    for (int32_t i = 0; i < head.kept(); ++i) {
      const int32_t position = head.positions[i];
      if (position >= prefix) scores[h][position - prefix] = head.scores[position];
    }
  }
  const HeadSelection selection = SelectEntries(method, scores, keep);

  DocumentPayload cut;
  cut.storage = source.storage;
  cut.num_layers = source.num_layers;
  cut.num_kv_heads = source.num_kv_heads;
  cut.head_dim = source.head_dim;
  cut.original_length = source.original_length;
  cut.prefix_text = source.prefix_text;
  cut.prefix_token_ids = source.prefix_token_ids;
  cut.heads.resize(source.heads.size());
  for (size_t h = 0; h < source.heads.size(); ++h) {
    const HeadKv& from = source.heads[h];
    std::vector<bool> chosen(document, false);
    // A per-head rule may pick positions the cache no longer holds; they stay dropped.
    for (int32_t p : selection[h]) chosen[p] = scores[h][p] != kDropped;
    std::vector<bool> keep_entry(from.kept());
    for (int32_t i = 0; i < from.kept(); ++i) {
      const int32_t position = from.positions[i];
      keep_entry[i] = position < prefix || chosen[position - prefix];
    }
    cut.heads[h] = merge ? FoldDroppedEntries(from, keep_entry, prefix, source.head_dim)
                         : KeptEntries(from, keep_entry, source.head_dim);
  }
  // Folded keys, values and votes are new numbers: rounded to the payload's precision, so the
  // cut serves exactly what a store of it would read back.
  if (merge) RoundForStorage(cut.storage, cut);
  return cut;
}

}  // namespace kvd::cache_store
