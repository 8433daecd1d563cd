#include "server/config/keepkv_config.h"

#include <string_view>

namespace kvd::server {

cache_store::KeepKvParams KeepKvConfig::Params() const {
  cache_store::KeepKvParams params;
  params.budget_tokens = budget_tokens;
  params.budget_fraction = budget_fraction;
  params.alpha = alpha;
  params.window = window;
  params.refresh_every = refresh_every;
  params.recent = recent;
  params.sink = sink;
  params.protected_prefix = 0;
  params.method =
      cache_store::ParseMergeMethod(method).value_or(cache_store::MergeMethod::kGroupMean);
  params.min_cosine = static_cast<float>(min_cosine);
  params.pool = pool;
  params.selection = cache_store::ParseMergeSelection(selection).value_or(
      cache_store::MergeSelection::kLowestScores);
  return params;
}

KeepKvViolation SplitKeepKvError(const absl::Status& status) {
  constexpr std::string_view kPrefix = "keepkv.";
  const std::string_view message(status.message().data(), status.message().size());
  if (!message.starts_with(kPrefix)) return {"", std::string(message)};
  const std::string_view rest = message.substr(kPrefix.size());
  const size_t space = rest.find(' ');
  if (space == std::string_view::npos || space == 0) return {"", std::string(message)};
  return {std::string(rest.substr(0, space)), std::string(rest.substr(space + 1))};
}

}  // namespace kvd::server
