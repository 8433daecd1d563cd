// Filters over lists and dicts (sort, map, selectattr, join...), registered by filters.cc.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "text/internal/jinja/value.h"

namespace kvd::text::internal::jinja {

// jinja2's attribute path lookup for `attribute=` arguments: "a.b" or "0" step by step,
// items first, as environment.getitem does.
absl::StatusOr<Value> LookupAttributePath(const Value& value, const Value& path);

absl::StatusOr<Value> FilterLength(const Value& input, CallArgs& args);
absl::StatusOr<Value> FilterFirst(const Value& input, CallArgs& args);
absl::StatusOr<Value> FilterLast(const Value& input, CallArgs& args);
absl::StatusOr<Value> FilterJoin(const Value& input, CallArgs& args);
absl::StatusOr<Value> FilterList(const Value& input, CallArgs& args);
absl::StatusOr<Value> FilterItems(const Value& input, CallArgs& args);
absl::StatusOr<Value> FilterDictSort(const Value& input, CallArgs& args);
absl::StatusOr<Value> FilterSelectAttr(const Value& input, CallArgs& args);
absl::StatusOr<Value> FilterRejectAttr(const Value& input, CallArgs& args);
absl::StatusOr<Value> FilterSelect(const Value& input, CallArgs& args);
absl::StatusOr<Value> FilterReject(const Value& input, CallArgs& args);
absl::StatusOr<Value> FilterMap(const Value& input, CallArgs& args);
absl::StatusOr<Value> FilterUnique(const Value& input, CallArgs& args);
absl::StatusOr<Value> FilterReverse(const Value& input, CallArgs& args);
absl::StatusOr<Value> FilterSort(const Value& input, CallArgs& args);
absl::StatusOr<Value> FilterMin(const Value& input, CallArgs& args);
absl::StatusOr<Value> FilterMax(const Value& input, CallArgs& args);
absl::StatusOr<Value> FilterSum(const Value& input, CallArgs& args);

}  // namespace kvd::text::internal::jinja
