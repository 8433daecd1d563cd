#include "server/api/keepkv_request.h"

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/http/error_response.h"

namespace kvd::server {
namespace {

using json = nlohmann::json;

constexpr std::string_view kKeys[] = {"budget",        "alpha",  "window",
                                      "refresh_every", "recent", "method"};

absl::Status Invalid(const std::string& param, std::string message) {
  return WithParam(absl::InvalidArgumentError(std::move(message)), param);
}

std::string ParamOf(std::string_view key) { return "keepkv." + std::string(key); }

// An integer JSON value as int64_t, the largest ones clamped (parsed non-negative integers are
// unsigned).
int64_t IntegerOf(const json& value) {
  if (!value.is_number_unsigned()) return value.get<int64_t>();
  return value.get<uint64_t>() > uint64_t{INT64_MAX} ? INT64_MAX
                                                     : static_cast<int64_t>(value.get<uint64_t>());
}

// An int32 from an integer JSON value at `key`.
absl::Status Integer(const json& value, std::string_view key, int32_t& out) {
  const std::string param = ParamOf(key);
  if (!value.is_number_integer()) {
    return Invalid(param,
                   absl::StrCat("'", param, "' must be an integer, got ", value.type_name()));
  }
  constexpr int64_t kMin = std::numeric_limits<int32_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  const int64_t number = IntegerOf(value);
  if (number < kMin || number > kMax) {
    return Invalid(param, absl::StrCat("'", param, "' must be in [", kMin, ", ", kMax, "], got ",
                                       value.dump()));
  }
  out = static_cast<int32_t>(number);
  return absl::OkStatus();
}

// `budget`: a number in (0, 1] is a fraction of the prompt (so that 1 and 1.0, which many JSON
// writers do not tell apart, both mean the whole prompt); a larger one an integer token count.
absl::Status Budget(const json& value, cache_store::KeepKvParams& params) {
  const std::string param = ParamOf("budget");
  if (!value.is_number()) {
    return Invalid(param, absl::StrCat("'", param,
                                       "' must be a positive token count or a fraction in (0, 1], "
                                       "got ",
                                       value.type_name()));
  }
  if (value.is_number_integer() && IntegerOf(value) != 1) {
    const int64_t tokens = IntegerOf(value);
    if (tokens < 1) {
      return Invalid(param, absl::StrCat("'", param,
                                         "' must be a positive token count or a fraction in "
                                         "(0, 1], got ",
                                         value.dump()));
    }
    if (tokens > std::numeric_limits<int32_t>::max()) {
      return Invalid(
          param, absl::StrCat("'", param, "' must be at most ", std::numeric_limits<int32_t>::max(),
                              " tokens, got ", value.dump()));
    }
    params.budget_tokens = static_cast<int32_t>(tokens);
    return absl::OkStatus();
  }
  const double fraction = value.get<double>();
  if (fraction > 1.0) {
    return Invalid(param, absl::StrCat("'", param, "' over 1 is a token count and must be an ",
                                       "integer, got ", value.dump()));
  }
  params.budget_tokens = 0;
  params.budget_fraction = fraction;  // KeepKvParams::Validate checks the range
  return absl::OkStatus();
}

absl::Status ApplyKey(std::string_view key, const json& value, cache_store::KeepKvParams& params) {
  const std::string param = ParamOf(key);
  if (key == "budget") return Budget(value, params);
  if (key == "alpha") {
    if (!value.is_number()) {
      return Invalid(param,
                     absl::StrCat("'", param, "' must be a number, got ", value.type_name()));
    }
    params.alpha = value.get<double>();
    return absl::OkStatus();
  }
  if (key == "window") return Integer(value, key, params.window);
  if (key == "refresh_every") return Integer(value, key, params.refresh_every);
  if (key == "recent") return Integer(value, key, params.recent);
  // method
  if (!value.is_string()) {
    return Invalid(param, absl::StrCat("'", param, "' must be a string, got ", value.type_name()));
  }
  absl::StatusOr<cache_store::MergeMethod> method =
      cache_store::ParseMergeMethod(value.get<std::string>());
  if (!method.ok()) {
    return Invalid(param, absl::StrCat("'", param, "' ", SplitKeepKvError(method.status()).rule));
  }
  params.method = *method;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::optional<cache_store::KeepKvParams>> ParseKeepKvRequest(
    const json& body, const KeepKvConfig& defaults) {
  const auto it = body.find("keepkv");
  if (it == body.end()) {
    if (!defaults.enabled) return std::nullopt;
    return defaults.Params();
  }
  if (it->is_null()) return std::nullopt;
  if (!it->is_object()) {
    return Invalid("keepkv",
                   absl::StrCat("'keepkv' must be an object or null, got ", it->type_name()));
  }
  cache_store::KeepKvParams params = defaults.Params();
  for (const auto& [key, value] : it->items()) {
    bool known = false;
    for (std::string_view name : kKeys) known = known || key == name;
    if (!known) {
      return Invalid(ParamOf(key),
                     absl::StrCat("unsupported parameter '", ParamOf(key),
                                  "' (keepkv takes budget, alpha, window, refresh_every, recent, "
                                  "method)"));
    }
    if (value.is_null()) continue;
    if (absl::Status status = ApplyKey(key, value, params); !status.ok()) return status;
  }
  if (absl::Status status = params.Validate(); !status.ok()) {
    const KeepKvViolation violation = SplitKeepKvError(status);
    if (violation.field.empty()) return Invalid("keepkv", violation.rule);
    const std::string param = ParamOf(violation.field);
    std::string message = absl::StrCat("'", param, "' ", violation.rule);
    if (auto value = it->find(violation.field); value != it->end()) {
      absl::StrAppend(&message, ", got ", value->dump());
    }
    return Invalid(param, std::move(message));
  }
  return params;
}

}  // namespace kvd::server
