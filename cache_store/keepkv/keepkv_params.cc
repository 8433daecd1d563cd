#include "cache_store/keepkv/keepkv_params.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/enum_names.h"

namespace kvd::cache_store {

namespace {

constexpr auto kMergeMethodNames = base::MakeEnumNames<MergeMethod>({
    {MergeMethod::kGqaFit, "gqa_fit"},
    {MergeMethod::kGroupMean, "group_mean"},
    {MergeMethod::kWeightedMean, "weighted_mean"},
    {MergeMethod::kConvex, "convex"},
    {MergeMethod::kEvict, "evict"},
});

constexpr auto kMergeSelectionNames = base::MakeEnumNames<MergeSelection>({
    {MergeSelection::kLowestScores, "lowest_scores"},
    {MergeSelection::kSimilarPairs, "similar_pairs"},
});

}  // namespace

std::string_view MergeMethodName(MergeMethod method) { return kMergeMethodNames.Name(method); }

absl::StatusOr<MergeMethod> ParseMergeMethod(std::string_view name) {
  return kMergeMethodNames.Parse(name, "keepkv.method");
}

std::string_view MergeSelectionName(MergeSelection selection) {
  return kMergeSelectionNames.Name(selection);
}

absl::StatusOr<MergeSelection> ParseMergeSelection(std::string_view name) {
  return kMergeSelectionNames.Parse(name, "keepkv.selection");
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
