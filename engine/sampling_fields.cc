#include "engine/sampling_fields.h"

#include <cmath>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace kvd::engine {
namespace {

// Whole numbers in full ("2147483647", not "2.14748e+09"), others as absl writes them.
std::string NumberText(double value) {
  if (std::trunc(value) == value && std::fabs(value) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(value));
  }
  return absl::StrCat(value);
}

absl::Status Refused(const SamplingField& field, std::string_view rule, double value) {
  return absl::InvalidArgumentError(absl::StrCat("'", std::string(field.name), "' must be ",
                                                 std::string(rule), ", got ", NumberText(value)));
}

}  // namespace

bool SamplingRange::Contains(double value) const {
  if (min_open ? !(value > min) : !(value >= min)) return false;  // NaN too
  return value <= max;
}

std::string SamplingRange::Rule() const {
  std::string rule =
      absl::StrCat("in ", min_open ? "(" : "[", NumberText(min), ", ", NumberText(max), "]");
  if (!note.empty()) absl::StrAppend(&rule, " (", std::string(note), ")");
  return rule;
}

bool IsInteger(const SamplingField& field) {
  return std::holds_alternative<int32_t SamplingParams::*>(field.member);
}

absl::Status SetSamplingField(const SamplingField& field, double value, SamplingParams& params) {
  if (!field.range.Contains(value)) return Refused(field, field.range.Rule(), value);
  return std::visit(
      [&](auto member) -> absl::Status {
        using T = std::remove_cvref_t<decltype(params.*member)>;
        if constexpr (std::is_integral_v<T>) {
          if (std::trunc(value) != value) return Refused(field, "an integer", value);
        }
        const T stored = static_cast<T>(value);
        // A positive value too small for a float is 0, which may be outside the range.
        if (!field.range.Contains(static_cast<double>(stored))) {
          return Refused(field, field.range.Rule(), value);
        }
        params.*member = stored;
        return absl::OkStatus();
      },
      field.member);
}

absl::Status CheckSamplingField(const SamplingField& field, const SamplingParams& params) {
  const double value = SamplingFieldValue(field, params);
  if (!field.range.Contains(value)) return Refused(field, field.range.Rule(), value);
  return absl::OkStatus();
}

double SamplingFieldValue(const SamplingField& field, const SamplingParams& params) {
  return std::visit([&](auto member) { return static_cast<double>(params.*member); },
                    field.member);
}

std::string SamplingHelp(const SamplingField& field) {
  return absl::StrCat(std::string(field.doc), "; ", field.range.Rule());
}

std::string SamplingFlag(const SamplingField& field) {
  return "--" + absl::StrReplaceAll(std::string(field.name), {{"_", "-"}});
}

std::string SamplingDocRow(const SamplingField& field) {
  return absl::StrCat("| `", std::string(field.name), "` | ", SamplingHelp(field), " | `",
                      NumberText(SamplingFieldValue(field, SamplingParams{})), "` |");
}

const SamplingField* FindSamplingField(std::string_view name) {
  for (const SamplingField& field : kSamplingFields) {
    if (field.name == name) return &field;
  }
  return nullptr;
}

}  // namespace kvd::engine
