// Python-style argument binding for the interpreter's built-in functions.
#include "text/internal/jinja/call_args.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kvd::text::internal::jinja {

absl::StatusOr<std::vector<std::optional<Value>>> BindArgs(
    std::string_view function, const std::vector<std::string_view>& params, CallArgs& args) {
  std::vector<std::optional<Value>> bound(params.size());
  if (args.positional.size() > params.size()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(function), "() takes at most ",
                                                   params.size(), " arguments (",
                                                   args.positional.size(), " given)"));
  }
  for (size_t i = 0; i < args.positional.size(); ++i) bound[i] = std::move(args.positional[i]);
  for (auto& [name, value] : args.keyword) {
    size_t i = 0;
    while (i < params.size() && params[i] != name) ++i;
    if (i == params.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          std::string(function), "() got an unexpected keyword argument '", name, "'"));
    }
    if (bound[i].has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(function), "() got multiple values for argument '", name, "'"));
    }
    bound[i] = std::move(value);
  }
  return bound;
}

absl::StatusOr<std::string> StringArg(const std::optional<Value>& arg, std::string_view what,
                                      std::string fallback) {
  if (!arg.has_value()) return fallback;
  if (!arg->is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), " must be str, not ", arg->TypeName()));
  }
  return arg->string_value();
}

absl::StatusOr<std::optional<std::string>> OptionalStringArg(const std::optional<Value>& arg,
                                                             std::string_view what) {
  if (!arg.has_value() || arg->is_none()) return std::optional<std::string>();
  if (!arg->is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), " must be str or None, not ", arg->TypeName()));
  }
  return std::optional<std::string>(arg->string_value());
}

absl::StatusOr<int64_t> IntArg(const std::optional<Value>& arg, std::string_view what,
                               int64_t fallback) {
  if (!arg.has_value()) return fallback;
  if (arg->is_int()) return arg->int_value();
  if (arg->is_bool()) return static_cast<int64_t>(arg->bool_value());
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(what), " must be an integer, not ", arg->TypeName()));
}

bool BoolArg(const std::optional<Value>& arg, bool fallback) {
  return arg.has_value() ? arg->Truthy() : fallback;
}

}  // namespace kvd::text::internal::jinja
