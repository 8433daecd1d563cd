#include "server/core/keepkv_request.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/http/error_response.h"

namespace kvd::server {
namespace {

// 400 naming the field as the param: "'keepkv.alpha' must be in [0, 1), got 1.5".
absl::Status Invalid(const cache_store::KeepKvViolation& violation) {
  const std::string param = "keepkv." + std::string(violation.field);
  return WithParam(absl::InvalidArgumentError(absl::StrCat("'", param, "' ", violation.message)),
                   param);
}

}  // namespace

absl::StatusOr<std::optional<cache_store::KeepKvParams>> ResolveKeepKv(
    const std::optional<KeepKvRequest>& request, const KeepKvConfig& defaults) {
  if (!request) {
    if (!defaults.enabled) return std::nullopt;
    return defaults.params;
  }
  if (request->disabled) {
    if (!request->settings.empty()) {
      return WithParam(absl::InvalidArgumentError(
                           "keepkv.disabled turns KeepKV off; it takes no other keepkv field"),
                       "keepkv.disabled");
    }
    return std::nullopt;
  }
  cache_store::KeepKvParams params = defaults.params;
  for (const auto& [field, value] : request->settings) {
    if (auto violation = cache_store::SetKeepKvField(*field, value, params)) {
      return Invalid(*violation);
    }
  }
  if (auto violation = params.Check()) return Invalid(*violation);
  return params;
}

}  // namespace kvd::server
