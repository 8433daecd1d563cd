#include "cache_store/keepkv/keepkv_fields.h"

#include <cmath>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "base/check.h"

namespace kvd::cache_store {
namespace {

constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

constexpr char kBudgetRule[] = "must be a positive token count or a fraction in (0, 1]";

template <typename T>
inline constexpr bool kIsName = std::is_same_v<T, MergeMethod> || std::is_same_v<T, MergeSelection>;

template <typename T>
constexpr const auto& NamesOf() {
  if constexpr (std::is_same_v<T, MergeMethod>) {
    return kMergeMethodNames;
  } else {
    return kMergeSelectionNames;
  }
}

KeepKvViolation Violation(const KeepKvField& field, std::string message) {
  return {field.name, std::move(message)};
}

// The rule of a budget of `tokens` (0: the fraction applies) and `fraction`.
std::optional<std::string> BudgetError(const KeepKvBudget& budget) {
  if (budget.tokens < 0) return absl::StrCat(kBudgetRule, ", got ", budget.tokens);
  if (budget.tokens == 0 && !(budget.fraction > 0.0 && budget.fraction <= 1.0)) {
    return absl::StrCat(kBudgetRule, ", got ", budget.fraction);
  }
  return std::nullopt;
}

std::optional<std::string> TokenCountError(int64_t tokens) {
  if (tokens < 1) return absl::StrCat(kBudgetRule, ", got ", tokens);
  if (tokens > kInt32Max) {
    return absl::StrCat("must be at most ", kInt32Max, " tokens, got ", tokens);
  }
  return std::nullopt;
}

// A budget from how a client wrote it: an integer (1 is the whole prompt, as 1.0 is), a
// fraction, or an explicit token count.
std::variant<KeepKvBudget, std::string> BudgetOf(const KeepKvValue& value) {
  if (const auto* count = std::get_if<KeepKvTokenCount>(&value)) {
    if (auto error = TokenCountError(count->tokens)) return *error;
    return KeepKvBudget{.tokens = static_cast<int32_t>(count->tokens)};
  }
  if (const auto* integer = std::get_if<int64_t>(&value); integer != nullptr && *integer != 1) {
    if (auto error = TokenCountError(*integer)) return *error;
    return KeepKvBudget{.tokens = static_cast<int32_t>(*integer)};
  }
  if (std::holds_alternative<std::string>(value)) return std::string(kBudgetRule);
  const double fraction = std::holds_alternative<int64_t>(value) ? 1.0 : std::get<double>(value);
  if (fraction > 1.0) {
    return absl::StrCat("over 1 is a token count and must be an integer, got ", fraction);
  }
  const KeepKvBudget budget{.tokens = 0, .fraction = fraction};
  if (auto error = BudgetError(budget)) return *error;
  return budget;
}

std::optional<std::string> RangeError(const KeepKvRange& range, double value) {
  if (range.Contains(value)) return std::nullopt;
  return absl::StrCat("must be ", range.Rule(), ", got ", value);
}

}  // namespace

bool KeepKvRange::Contains(double value) const {
  if (!(value >= min)) return false;  // NaN too
  if (max_open ? !(value < max) : !(value <= max)) return false;
  return !odd || std::fmod(value, 2.0) != 0.0;
}

std::string KeepKvRange::Rule() const {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::string rule = odd ? "odd and " : "";
  if (max == kInf) {
    absl::StrAppend(&rule, ">= ", min);
  } else if (min == -kInf) {
    absl::StrAppend(&rule, max_open ? "< " : "<= ", max);
  } else {
    absl::StrAppend(&rule, "in [", min, ", ", max, max_open ? ")" : "]");
  }
  if (!note.empty()) absl::StrAppend(&rule, " (", std::string(note), ")");
  return rule;
}

KeepKvValueType ValueTypeOf(const KeepKvField& field) {
  return std::visit(
      [](auto member) {
        using T = std::remove_cvref_t<decltype(KeepKvParams{}.*member)>;
        if constexpr (std::is_same_v<T, KeepKvBudget>) {
          return KeepKvValueType::kBudget;
        } else if constexpr (std::is_same_v<T, int32_t>) {
          return KeepKvValueType::kInteger;
        } else if constexpr (kIsName<T>) {
          return KeepKvValueType::kName;
        } else {
          return KeepKvValueType::kNumber;
        }
      },
      field.member);
}

std::optional<KeepKvViolation> SetKeepKvField(const KeepKvField& field, const KeepKvValue& value,
                                              KeepKvParams& params) {
  return std::visit(
      [&](auto member) -> std::optional<KeepKvViolation> {
        using T = std::remove_cvref_t<decltype(params.*member)>;
        if constexpr (std::is_same_v<T, KeepKvBudget>) {
          auto budget = BudgetOf(value);
          if (auto* error = std::get_if<std::string>(&budget)) return Violation(field, *error);
          const KeepKvBudget& given = std::get<KeepKvBudget>(budget);
          if (given.tokens > 0) {
            (params.*member).tokens = given.tokens;  // the fraction stays, unused
          } else {
            params.*member = given;
          }
        } else if constexpr (kIsName<T>) {
          const auto* name = std::get_if<std::string>(&value);
          const std::optional<T> parsed = name ? NamesOf<T>().Find(*name) : std::nullopt;
          if (!parsed) {
            return Violation(field, absl::StrCat("must be one of ", NamesOf<T>().Joined(),
                                                 "; got \"", name ? *name : "", "\""));
          }
          params.*member = *parsed;
        } else if constexpr (std::is_same_v<T, int32_t>) {
          const auto* integer = std::get_if<int64_t>(&value);
          if (integer == nullptr) return Violation(field, "must be an integer");
          if (*integer < kInt32Min || *integer > kInt32Max) {
            return Violation(field, absl::StrCat("must be in [", kInt32Min, ", ", kInt32Max,
                                                 "], got ", *integer));
          }
          if (auto error = RangeError(field.range, static_cast<double>(*integer))) {
            return Violation(field, *error);
          }
          params.*member = static_cast<int32_t>(*integer);
        } else {
          const auto* integer = std::get_if<int64_t>(&value);
          const auto* number = std::get_if<double>(&value);
          if (integer == nullptr && number == nullptr) return Violation(field, "must be a number");
          const double given = number ? *number : static_cast<double>(*integer);
          if (auto error = RangeError(field.range, given)) return Violation(field, *error);
          params.*member = static_cast<T>(given);
        }
        return std::nullopt;
      },
      field.member);
}

std::string KeepKvFieldText(const KeepKvField& field, const KeepKvParams& params) {
  return std::visit(
      [&](auto member) -> std::string {
        using T = std::remove_cvref_t<decltype(params.*member)>;
        const T& value = params.*member;
        if constexpr (std::is_same_v<T, KeepKvBudget>) {
          return value.tokens != 0 ? absl::StrCat(value.tokens) : absl::StrCat(value.fraction);
        } else if constexpr (kIsName<T>) {
          return std::string(NamesOf<T>().Name(value));
        } else {
          return absl::StrCat(value);
        }
      },
      field.member);
}

std::string KeepKvDocRow(const KeepKvField& field, bool with_scope) {
  std::string meaning(field.doc);
  std::visit(
      [&](auto member) {
        using T = std::remove_cvref_t<decltype(KeepKvParams{}.*member)>;
        if constexpr (kIsName<T>) {
          std::string names;
          for (const auto& entry : NamesOf<T>().entries()) {
            absl::StrAppend(&names, names.empty() ? "" : ", ", "`", std::string(entry.name), "`");
          }
          absl::StrAppend(&meaning, "; one of ", names);
        } else if constexpr (!std::is_same_v<T, KeepKvBudget>) {
          absl::StrAppend(&meaning, "; ", field.range.Rule());
        }
      },
      field.member);
  if (with_scope && field.scope == KeepKvScope::kOperator) {
    absl::StrAppend(&meaning, "; not settable per request");
  }
  return absl::StrCat("| `", std::string(field.name), "` | ", meaning, " | `",
                      KeepKvFieldText(field, KeepKvParams{}), "` |");
}

const KeepKvField* FindKeepKvField(std::string_view name) {
  for (const KeepKvField& field : kKeepKvFields) {
    if (field.name == name) return &field;
  }
  return nullptr;
}

std::string KeepKvKeys(KeepKvScope scope) {
  std::string keys;
  for (const KeepKvField& field : kKeepKvFields) {
    if (MaySet(scope, field))
      absl::StrAppend(&keys, keys.empty() ? "" : ", ", std::string(field.name));
  }
  return keys;
}

std::optional<KeepKvViolation> KeepKvParams::Check() const {
  for (const KeepKvField& field : kKeepKvFields) {
    std::optional<std::string> error = std::visit(
        [&](auto member) -> std::optional<std::string> {
          using T = std::remove_cvref_t<decltype(this->*member)>;
          if constexpr (std::is_same_v<T, KeepKvBudget>) {
            return BudgetError(this->*member);
          } else if constexpr (kIsName<T>) {
            return std::nullopt;
          } else {
            return RangeError(field.range, static_cast<double>(this->*member));
          }
        },
        field.member);
    if (error) return Violation(field, *std::move(error));
  }
  return std::nullopt;
}

}  // namespace kvd::cache_store
