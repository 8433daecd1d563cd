#include "server/api/keepkv_request.h"

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "server/api/completion_rules.h"
#include "server/http/error_response.h"

namespace kvd::server {
namespace {

absl::Status Invalid(const std::string& param, std::string message) {
  return WithParam(absl::InvalidArgumentError(std::move(message)), param);
}

std::string ParamOf(std::string_view key) { return "keepkv." + std::string(key); }

// `value` into an int32 field.
absl::Status Integer32(const std::optional<int64_t>& value, std::string_view key, int32_t& out) {
  if (!value) return absl::OkStatus();
  constexpr int64_t kMin = std::numeric_limits<int32_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  if (*value < kMin || *value > kMax) {
    const std::string param = ParamOf(key);
    return Invalid(param,
                   absl::StrCat("'", param, "' must be in [", kMin, ", ", kMax, "], got ", *value));
  }
  out = static_cast<int32_t>(*value);
  return absl::OkStatus();
}

absl::Status Budget(const KeepKvRequest& request, cache_store::KeepKvParams& params) {
  if (request.budget_tokens) {
    const int64_t tokens = *request.budget_tokens;
    if (tokens < 1) {
      return Invalid("keepkv.budget",
                     absl::StrCat("'keepkv.budget' ", KeepKvBudgetRule(), ", got ", tokens));
    }
    if (tokens > std::numeric_limits<int32_t>::max()) {
      return Invalid("keepkv.budget",
                     absl::StrCat("'keepkv.budget' must be at most ",
                                  std::numeric_limits<int32_t>::max(), " tokens, got ", tokens));
    }
    params.budget_tokens = static_cast<int32_t>(tokens);
  } else if (request.budget_fraction) {
    params.budget_tokens = 0;
    params.budget_fraction = *request.budget_fraction;  // Validate checks the range
  }
  return absl::OkStatus();
}

// The request's value of a KeepKV field, as its errors quote it; empty when it did not set it.
std::string GivenValue(const KeepKvRequest& request, std::string_view field) {
  auto text = [](const auto& value) { return value ? absl::StrCat(*value) : std::string(); };
  if (field == "budget") {
    return request.budget_tokens ? text(request.budget_tokens) : text(request.budget_fraction);
  }
  if (field == "alpha") return text(request.alpha);
  if (field == "window") return text(request.window);
  if (field == "refresh_every") return text(request.refresh_every);
  if (field == "recent") return text(request.recent);
  if (field == "method" && request.method) return "\"" + *request.method + "\"";
  return "";
}

bool SetsAnything(const KeepKvRequest& request) {
  return request.budget_tokens || request.budget_fraction || request.alpha || request.window ||
         request.refresh_every || request.recent || request.method;
}

}  // namespace

absl::StatusOr<std::optional<cache_store::KeepKvParams>> ResolveKeepKv(
    const std::optional<KeepKvRequest>& request, const KeepKvConfig& defaults) {
  if (!request) {
    if (!defaults.enabled) return std::nullopt;
    return defaults.Params();
  }
  if (request->disabled) {
    if (SetsAnything(*request)) {
      return Invalid("keepkv.disabled",
                     "keepkv.disabled turns KeepKV off; it takes no other keepkv field");
    }
    return std::nullopt;
  }
  cache_store::KeepKvParams params = defaults.Params();
  KVD_RETURN_IF_ERROR(Budget(*request, params));
  if (request->alpha) params.alpha = *request->alpha;
  KVD_RETURN_IF_ERROR(Integer32(request->window, "window", params.window));
  KVD_RETURN_IF_ERROR(Integer32(request->refresh_every, "refresh_every", params.refresh_every));
  KVD_RETURN_IF_ERROR(Integer32(request->recent, "recent", params.recent));
  if (request->method) {
    absl::StatusOr<cache_store::MergeMethod> method =
        cache_store::ParseMergeMethod(*request->method);
    if (!method.ok()) {
      return Invalid("keepkv.method",
                     absl::StrCat("'keepkv.method' ", SplitKeepKvError(method.status()).rule));
    }
    params.method = *method;
  }
  if (absl::Status status = params.Validate(); !status.ok()) {
    const KeepKvViolation violation = SplitKeepKvError(status);
    if (violation.field.empty()) return Invalid("keepkv", violation.rule);
    const std::string param = ParamOf(violation.field);
    std::string message = absl::StrCat("'", param, "' ", violation.rule);
    if (const std::string given = GivenValue(*request, violation.field); !given.empty()) {
      absl::StrAppend(&message, ", got ", given);
    }
    return Invalid(param, std::move(message));
  }
  return params;
}

}  // namespace kvd::server
