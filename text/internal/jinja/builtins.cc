// Global functions of the chat-template environment.
#include "text/internal/jinja/builtins.h"

#include <ctime>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "text/internal/jinja/call_args.h"
#include "text/internal/jinja/errors.h"

namespace kvd::text::internal::jinja {

namespace {

absl::StatusOr<Value> Range(Renderer& renderer, CallArgs& args) {
  if (!args.keyword.empty())
    return absl::InvalidArgumentError("range() takes no keyword arguments");
  if (args.positional.empty() || args.positional.size() > 3) {
    return absl::InvalidArgumentError("range expected 1 to 3 arguments");
  }
  int64_t bounds[3] = {0, 0, 1};
  for (size_t i = 0; i < args.positional.size(); ++i) {
    const Value& v = args.positional[i];
    if (!v.is_int() && !v.is_bool()) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", v.TypeName(), "' object cannot be interpreted as an integer"));
    }
    bounds[args.positional.size() == 1 ? 1 : i] = v.is_int() ? v.int_value() : v.bool_value();
  }
  const int64_t start = bounds[0], stop = bounds[1], step = bounds[2];
  if (step == 0) return absl::InvalidArgumentError("range() arg 3 must not be zero");
  // The length in unsigned arithmetic, which cannot overflow for any int64 bounds.
  uint64_t count = 0;
  if (step > 0 ? start < stop : start > stop) {
    const uint64_t span = step > 0 ? static_cast<uint64_t>(stop) - static_cast<uint64_t>(start)
                                   : static_cast<uint64_t>(start) - static_cast<uint64_t>(stop);
    const uint64_t magnitude =
        step > 0 ? static_cast<uint64_t>(step) : static_cast<uint64_t>(-(step + 1)) + 1;
    count = (span - 1) / magnitude + 1;
  }
  if (count > static_cast<uint64_t>(INT64_MAX)) {
    return absl::InvalidArgumentError("range() too long");
  }
  KVD_RETURN_IF_ERROR(renderer.CountIterations(static_cast<int64_t>(count)));
  ValueList items;
  items.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) {
    // Wrapping unsigned arithmetic: the result lies between start and stop.
    items.push_back(Value::Int(static_cast<int64_t>(
        static_cast<uint64_t>(start) + static_cast<uint64_t>(i) * static_cast<uint64_t>(step))));
  }
  return Value::List(std::move(items));
}

// namespace(mapping?, **kw) and dict(mapping?, **kw): a positional dict, then keywords.
absl::StatusOr<ValueDict> MappingArgs(std::string_view function, CallArgs& args) {
  if (args.positional.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(function), "() takes at most 1 positional argument"));
  }
  ValueDict dict;
  if (!args.positional.empty()) {
    const Value& initial = args.positional[0];
    if (!initial.is_dict()) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(function), "() argument must be a mapping"));
    }
    dict = initial.dict_value();
  }
  for (auto& [name, value] : args.keyword) dict.Set(Value::String(name), std::move(value));
  return dict;
}

absl::StatusOr<Value> RaiseException(CallArgs& args) {
  KVD_JINJA_BIND_ARGS("raise_exception", "message");
  return RaisedError(bound[0].has_value() ? bound[0]->Str() : "raise_exception called");
}

// HF's strftime_now: datetime.now().strftime(format), in local time.
absl::StatusOr<Value> StrftimeNow(CallArgs& args) {
  KVD_JINJA_BIND_ARGS("strftime_now", "format");
  KVD_ASSIGN_OR_RETURN(std::string format, StringArg(bound[0], "strftime format", ""));
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  if (format.empty()) return Value::String("");
  char buffer[512];
  const size_t n = std::strftime(buffer, sizeof(buffer), format.c_str(), &local);
  if (n == 0)
    return absl::InvalidArgumentError("strftime format produced no output or is too long");
  return Value::String(std::string(buffer, n));
}

}  // namespace

void AddBuiltins(Renderer& renderer, Scope& scope) {
  Renderer* r = &renderer;
  scope.Set("range", Value::Function("range", [r](CallArgs& args) { return Range(*r, args); }));
  scope.Set("namespace", Value::Function("namespace", [r](CallArgs& args) -> absl::StatusOr<Value> {
              KVD_ASSIGN_OR_RETURN(ValueDict attributes, MappingArgs("namespace", args));
              return r->NewNamespace(std::move(attributes));
            }));
  scope.Set("dict", Value::Function("dict", [](CallArgs& args) -> absl::StatusOr<Value> {
              KVD_ASSIGN_OR_RETURN(ValueDict dict, MappingArgs("dict", args));
              return Value::Dict(std::move(dict));
            }));
  scope.Set("raise_exception", Value::Function("raise_exception", RaiseException));
  scope.Set("strftime_now", Value::Function("strftime_now", StrftimeNow));
}

}  // namespace kvd::text::internal::jinja
