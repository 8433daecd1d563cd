#include "cache_store/keepkv/keepkv_params.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace kvd::cache_store {

std::string_view MergeMethodName(MergeMethod method) {
  switch (method) {
    case MergeMethod::kGqaFit:
      return "gqa_fit";
    case MergeMethod::kGroupMean:
      return "group_mean";
    case MergeMethod::kWeightedMean:
      return "weighted_mean";
    case MergeMethod::kConvex:
      return "convex";
    case MergeMethod::kEvict:
      return "evict";
  }
  return "unknown";
}

absl::StatusOr<MergeMethod> ParseMergeMethod(std::string_view name) {
  for (MergeMethod method :
       {MergeMethod::kGqaFit, MergeMethod::kGroupMean, MergeMethod::kWeightedMean,
        MergeMethod::kConvex, MergeMethod::kEvict}) {
    if (MergeMethodName(method) == name) return method;
  }
  return absl::InvalidArgumentError(
      "keepkv.method must be one of gqa_fit, group_mean, weighted_mean, convex, evict; got \"" +
      std::string(name) + "\"");
}

std::string_view MergeSelectionName(MergeSelection selection) {
  return selection == MergeSelection::kLowestScores ? "lowest_scores" : "similar_pairs";
}

absl::StatusOr<MergeSelection> ParseMergeSelection(std::string_view name) {
  for (MergeSelection selection : {MergeSelection::kLowestScores, MergeSelection::kSimilarPairs}) {
    if (MergeSelectionName(selection) == name) return selection;
  }
  return absl::InvalidArgumentError(
      "keepkv.selection must be one of lowest_scores, similar_pairs; got \"" + std::string(name) +
      "\"");
}

absl::Status KeepKvParams::Validate() const {
  auto bad = [](std::string_view field, std::string_view rule) {
    return absl::InvalidArgumentError("keepkv." + std::string(field) + " must be " +
                                      std::string(rule));
  };
  if (budget_tokens < 0) return bad("budget", "a positive token count or a fraction in (0, 1]");
  if (budget_tokens == 0 && !(budget_fraction > 0.0 && budget_fraction <= 1.0)) {
    return bad("budget", "a positive token count or a fraction in (0, 1]");
  }
  if (!(alpha >= 0.0 && alpha < 1.0)) return bad("alpha", "in [0, 1)");
  if (window < 1) return bad("window", ">= 1");
  if (pool < 1 || pool % 2 == 0) return bad("pool", "odd and >= 1");
  if (refresh_every < 0) return bad("refresh_every", ">= 0 (0: never)");
  if (recent < 0) return bad("recent", ">= 0");
  if (sink < 0) return bad("sink", ">= 0");
  if (protected_prefix < 0) return bad("protected_prefix", ">= 0");
  if (!(min_cosine >= -1.0f && min_cosine <= 1.0f)) return bad("min_cosine", "in [-1, 1]");
  return absl::OkStatus();
}

int32_t KeepKvParams::Budget(int32_t prompt_tokens) const {
  if (budget_tokens > 0) return budget_tokens;
  const double budget = std::ceil(budget_fraction * std::max(prompt_tokens, 0));
  return std::max(1, static_cast<int32_t>(budget));
}

}  // namespace kvd::cache_store
