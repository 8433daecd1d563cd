#include "base/config_key.h"

#include <cmath>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace kvd::base {
namespace {

constexpr char kKeyPathPayload[] = "type.kvd/config.key_path";

// A bound or value as errors print it: whole numbers in full ("315360000"), others as written.
std::string Shown(double value) {
  if (std::isfinite(value) && value == std::trunc(value) && std::fabs(value) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(value));
  }
  return absl::StrCat(value);
}

// Whether `value` lies in `range`.
template <typename Value>
bool InRange(const ValueRange& range, Value value) {
  const double v = static_cast<double>(value);
  const bool above_min = range.min_open ? v > range.min : v >= range.min;
  const bool below_max = range.max_open ? v < range.max : v <= range.max;
  return above_min && below_max;
}

absl::Status RangeError(std::string_view path, const ValueRange& range, std::string_view shown) {
  std::string rule;
  if (std::isfinite(range.min) && std::isfinite(range.max)) {
    rule = absl::StrCat("must be in ", range.min_open ? "(" : "[", Shown(range.min), ", ",
                        Shown(range.max), range.max_open ? ")" : "]");
  } else if (std::isfinite(range.min)) {
    rule = absl::StrCat(range.min_open ? "must be greater than " : "must be at least ",
                        Shown(range.min));
    if (!range.zero_means.empty() && range.min == 0 && !range.min_open) {
      rule += " (0: " + std::string(range.zero_means) + ")";
    }
  } else if (std::isfinite(range.max)) {
    rule =
        absl::StrCat(range.max_open ? "must be less than " : "must be at most ", Shown(range.max));
  } else {
    rule = "must be a finite number";
  }
  if (!range.unit.empty()) rule += " " + std::string(range.unit);
  return ConfigKeyError(path, rule + ", got " + std::string(shown));
}

}  // namespace

absl::Status ConfigKeyError(std::string_view path, std::string_view message) {
  absl::Status status = absl::InvalidArgumentError(std::string(path) + ": " + std::string(message));
  status.SetPayload(kKeyPathPayload, absl::Cord(std::string(path)));
  return status;
}

std::optional<std::string> ConfigErrorKeyPath(const absl::Status& status) {
  auto payload = status.GetPayload(kKeyPathPayload);
  if (!payload.has_value()) return std::nullopt;
  return std::string(*payload);
}

std::string ConfigKeyPath(std::string_view prefix, std::string_view name) {
  return prefix.empty() ? std::string(name) : std::string(prefix) + "." + std::string(name);
}

absl::Status CheckNumber(std::string_view path, const ValueRange& range, double value) {
  if (std::isfinite(value) && InRange(range, value)) return absl::OkStatus();
  return RangeError(path, range, Shown(value));
}

absl::Status CheckNumber(std::string_view path, const ValueRange& range, int64_t value) {
  if (InRange(range, value)) return absl::OkStatus();
  return RangeError(path, range, absl::StrCat(value));
}

absl::Status CheckNumber(std::string_view path, const ValueRange& range, uint64_t value) {
  if (InRange(range, value)) return absl::OkStatus();
  return RangeError(path, range, absl::StrCat(value));
}

absl::Status CheckText(std::string_view path, const TextRule& rule, std::string_view value) {
  if (rule.non_empty && value.empty()) return ConfigKeyError(path, "must not be empty");
  if (rule.max_bytes != 0 && value.size() > rule.max_bytes) {
    return ConfigKeyError(
        path, absl::StrCat("must be at most ", rule.max_bytes, " bytes, got ", value.size()));
  }
  if (rule.printable) {
    for (char c : value) {
      if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
        return ConfigKeyError(path, "must not contain whitespace or control characters");
      }
    }
  }
  if (rule.choices.empty()) return absl::OkStatus();
  for (std::string_view choice : rule.choices) {
    if (value == choice) return absl::OkStatus();
  }
  std::string message = "must be one of ";
  for (std::string_view choice : rule.choices) {
    if (message.back() != ' ') message += ", ";
    message += choice;
  }
  return ConfigKeyError(path, message + ", got \"" + std::string(value) + "\"");
}

}  // namespace kvd::base
