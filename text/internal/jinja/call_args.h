// Binding call arguments to named parameters the way Python does, for filters, tests,
// methods, global functions and macros.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/status_macros.h"
#include "text/internal/jinja/value.h"

// In a function with a `CallArgs& args` parameter, declares `bound`: the arguments bound to
// the parameter names that follow `function`, or returns the binding error.
#define KVD_JINJA_BIND_ARGS(function, ...)                      \
  KVD_ASSIGN_OR_RETURN(std::vector<std::optional<Value>> bound, \
                       BindArgs(function, {__VA_ARGS__}, args))

namespace kvd::text::internal::jinja {

// `args` matched against `params` in order: positional first, then keywords by name. Absent
// parameters are nullopt. InvalidArgument naming `function` for too many positional
// arguments, an unknown keyword or a parameter given twice.
absl::StatusOr<std::vector<std::optional<Value>>> BindArgs(
    std::string_view function, const std::vector<std::string_view>& params, CallArgs& args);

// Typed views of bound arguments: the default when absent, InvalidArgument when of the wrong
// type. `what` names the argument in messages ("replace() argument 1").
absl::StatusOr<std::string> StringArg(const std::optional<Value>& arg, std::string_view what,
                                      std::string fallback);
absl::StatusOr<std::optional<std::string>> OptionalStringArg(const std::optional<Value>& arg,
                                                             std::string_view what);
absl::StatusOr<int64_t> IntArg(const std::optional<Value>& arg, std::string_view what,
                               int64_t fallback);
bool BoolArg(const std::optional<Value>& arg, bool fallback);

}  // namespace kvd::text::internal::jinja
