#include "cache_store/keepkv/keepkv_params.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace kvd::cache_store {

absl::Status KeepKvParams::Validate() const {
  const std::optional<KeepKvViolation> violation = Check();
  if (!violation) return absl::OkStatus();
  return absl::InvalidArgumentError("keepkv." + std::string(violation->field) + " " +
                                    violation->message);
}

int32_t KeepKvParams::Budget(int32_t prompt_tokens) const {
  if (budget.tokens > 0) return budget.tokens;
  const double kept = std::ceil(budget.fraction * std::max(prompt_tokens, 0));
  return std::max(1, static_cast<int32_t>(kept));
}

}  // namespace kvd::cache_store
