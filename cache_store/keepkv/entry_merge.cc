#include "cache_store/keepkv/entry_merge.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "cache_store/keepkv/gqa_fit.h"
#include "cache_store/keepkv/merge_math.h"

namespace kvd::cache_store {
namespace {

// Key and value mixed with weight `share_e` for the evicted entry.
MergedEntry Mix(const MergeInput& evicted, const MergeInput& kept, double share_e) {
  MergedEntry out;
  out.rule = MergeRule::kWeightedMean;
  const size_t head_dim = kept.key.size();
  out.key.resize(head_dim);
  out.value.resize(head_dim);
  for (size_t i = 0; i < head_dim; ++i) {
    out.key[i] = static_cast<float>(share_e * evicted.key[i] + (1.0 - share_e) * kept.key[i]);
    out.value[i] = static_cast<float>(share_e * evicted.value[i] + (1.0 - share_e) * kept.value[i]);
  }
  return out;
}

}  // namespace

absl::StatusOr<MergedEntry> MergeEntries(MergeMethod method, const MergeInput& evicted,
                                         const MergeInput& kept, const MergeQueries& queries) {
  switch (method) {
    case MergeMethod::kGqaFit:
      return GqaFitMerge(evicted, kept, queries.vectors, queries.scale, {});
    case MergeMethod::kGroupMean:
      return ZipMerge(evicted, kept);
    case MergeMethod::kWeightedMean: {
      if (absl::Status s = CheckMergePair(evicted, kept); !s.ok()) return s;
      // Weights p * s with s summed over the queries, in the log domain.
      const double log_w_e = evicted.log_vote + LogSumExp(evicted.logits);
      const double log_w_c = kept.log_vote + LogSumExp(kept.logits);
      MergedEntry out = Mix(evicted, kept, std::exp(log_w_e - LogAddExp(log_w_e, log_w_c)));
      out.log_vote = static_cast<float>(LogAddExp(evicted.log_vote, kept.log_vote));
      return out;
    }
    case MergeMethod::kConvex: {
      if (absl::Status s = CheckMergePair(evicted, kept); !s.ok()) return s;
      MergedEntry out = Mix(evicted, kept, 0.5);
      out.log_vote = kept.log_vote;
      return out;
    }
    case MergeMethod::kEvict:
      break;
  }
  return absl::InvalidArgumentError("merge: eviction merges nothing");
}

}  // namespace kvd::cache_store
