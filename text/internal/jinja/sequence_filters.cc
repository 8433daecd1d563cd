// jinja2's sequence filters, with its defaults: sorting, unique, min and max ignore case
// unless case_sensitive=true.
#include "text/internal/jinja/sequence_filters.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "text/internal/jinja/call_args.h"
#include "text/internal/jinja/filters.h"
#include "text/internal/jinja/operators.h"
#include "text/internal/jinja/predicates.h"
#include "text/internal/jinja/text.h"

namespace kvd::text::internal::jinja {

namespace {

// The key a case-insensitive comparison uses: strings lower-cased, anything else as is.
Value FoldCase(const Value& v, bool case_sensitive) {
  if (case_sensitive || !v.is_string()) return v;
  return Value::String(ToLower(v.string_value()));
}

// Items paired with the keys they sort or compare by.
absl::StatusOr<std::vector<std::pair<Value, Value>>> Keyed(const Value& input,
                                                           const std::optional<Value>& attribute,
                                                           bool case_sensitive) {
  KVD_ASSIGN_OR_RETURN(ValueList items, Iterate(input));
  std::vector<std::pair<Value, Value>> keyed;
  keyed.reserve(items.size());
  for (Value& item : items) {
    Value key = item;
    if (attribute.has_value() && !attribute->is_none()) {
      KVD_ASSIGN_OR_RETURN(key, LookupAttributePath(item, *attribute));
    }
    keyed.emplace_back(FoldCase(key, case_sensitive), std::move(item));
  }
  return keyed;
}

// Stable sort by key; the first comparison error is reported.
absl::Status SortKeyed(std::vector<std::pair<Value, Value>>& keyed, bool reverse) {
  absl::Status status;
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    absl::StatusOr<int> c = reverse ? Compare(b.first, a.first) : Compare(a.first, b.first);
    if (!c.ok()) {
      if (status.ok()) status = c.status();
      return false;
    }
    return *c < 0;
  });
  return status;
}

absl::StatusOr<Value> MinMax(const Value& input, CallArgs& args, bool want_max) {
  KVD_JINJA_BIND_ARGS(want_max ? "max" : "min", "case_sensitive", "attribute");
  KVD_ASSIGN_OR_RETURN(auto keyed, Keyed(input, bound[1], BoolArg(bound[0], false)));
  if (keyed.empty()) return Value::Undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  for (size_t i = 1; i < keyed.size(); ++i) {
    KVD_ASSIGN_OR_RETURN(int c, Compare(keyed[i].first, keyed[best].first));
    if (want_max ? c > 0 : c < 0) best = i;
  }
  return keyed[best].second;
}

// select/reject/selectattr/rejectattr: keeps items whose (attribute's) test result is `keep`.
absl::StatusOr<Value> SelectOrReject(const Value& input, CallArgs& args, bool keep,
                                     bool by_attribute) {
  KVD_ASSIGN_OR_RETURN(ValueList items, Iterate(input));
  size_t next = 0;
  std::optional<Value> attribute;
  if (by_attribute) {
    if (args.positional.empty()) {
      return absl::InvalidArgumentError("selectattr/rejectattr need an attribute");
    }
    attribute = args.positional[next++];
  }
  TestFunction test = nullptr;
  std::string test_name;
  if (next < args.positional.size()) {
    if (!args.positional[next].is_string()) {
      return absl::InvalidArgumentError("test name must be a string");
    }
    test_name = args.positional[next++].string_value();
    test = FindTest(test_name);
    if (test == nullptr) return absl::InvalidArgumentError("no test named '" + test_name + "'");
  }
  ValueList test_args(args.positional.begin() + static_cast<ptrdiff_t>(next),
                      args.positional.end());
  ValueList out;
  for (Value& item : items) {
    Value subject = item;
    if (attribute.has_value()) {
      KVD_ASSIGN_OR_RETURN(subject, LookupAttributePath(item, *attribute));
    }
    bool passed = subject.Truthy();
    if (test != nullptr) {
      CallArgs call{test_args, args.keyword};
      KVD_ASSIGN_OR_RETURN(passed, test(subject, call));
    }
    if (passed == keep) out.push_back(std::move(item));
  }
  return Value::List(std::move(out));
}

}  // namespace

absl::StatusOr<Value> LookupAttributePath(const Value& value, const Value& path) {
  if (!path.is_string()) return GetItem(value, path);
  Value current = value;
  for (absl::string_view part : absl::StrSplit(path.string_value(), '.')) {
    Value key = Value::String(std::string(part));
    if (!part.empty() && std::all_of(part.begin(), part.end(), ::isdigit)) {
      key = Value::Int(std::stoll(std::string(part)));
    }
    KVD_ASSIGN_OR_RETURN(current, GetItem(current, key));
    if (current.is_undefined()) break;
  }
  return current;
}

absl::StatusOr<Value> FilterLength(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("length");
  switch (input.kind()) {
    case Value::Kind::kUndefined:
      return Value::Int(0);
    case Value::Kind::kString:
      return Value::Int(static_cast<int64_t>(CodePointCount(input.string_value())));
    case Value::Kind::kList:
      return Value::Int(static_cast<int64_t>(input.list_value().size()));
    case Value::Kind::kDict:
      return Value::Int(static_cast<int64_t>(input.dict_value().size()));
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("object of type '", input.TypeName(), "' has no len()"));
  }
}

absl::StatusOr<Value> FilterFirst(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("first");
  KVD_ASSIGN_OR_RETURN(ValueList items, Iterate(input));
  if (items.empty()) return Value::Undefined("No first item, sequence was empty.");
  return items.front();
}

absl::StatusOr<Value> FilterLast(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("last");
  KVD_ASSIGN_OR_RETURN(ValueList items, Iterate(input));
  if (items.empty()) return Value::Undefined("No last item, sequence was empty.");
  return items.back();
}

absl::StatusOr<Value> FilterJoin(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("join", "d", "attribute");
  KVD_ASSIGN_OR_RETURN(std::string separator, StringArg(bound[0], "join separator", ""));
  KVD_ASSIGN_OR_RETURN(auto keyed, Keyed(input, bound[1], /*case_sensitive=*/true));
  std::string out;
  for (size_t i = 0; i < keyed.size(); ++i) {
    if (i > 0) out += separator;
    out += keyed[i].first.Str();
    if (out.size() > kMaxStringBytes) return absl::InvalidArgumentError("join result too long");
  }
  return Value::String(std::move(out));
}

absl::StatusOr<Value> FilterList(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("list");
  KVD_ASSIGN_OR_RETURN(ValueList items, Iterate(input));
  return Value::List(std::move(items));
}

absl::StatusOr<Value> FilterItems(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("items");
  if (input.is_undefined()) return Value::List({});
  if (!input.is_dict()) {
    return absl::InvalidArgumentError(
        absl::StrCat("can only get item pairs from a mapping, not ", input.TypeName()));
  }
  ValueList out;
  for (const auto& [key, value] : input.dict_value().entries()) {
    out.push_back(Value::Tuple({key, value}));
  }
  return Value::List(std::move(out));
}

absl::StatusOr<Value> FilterDictSort(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("dictsort", "case_sensitive", "by", "reverse");
  if (!input.is_dict()) return absl::InvalidArgumentError("dictsort expects a mapping");
  KVD_ASSIGN_OR_RETURN(std::string by, StringArg(bound[1], "dictsort by", "key"));
  if (by != "key" && by != "value") {
    return absl::InvalidArgumentError("You can only sort by either 'key' or 'value'");
  }
  const bool case_sensitive = BoolArg(bound[0], false);
  std::vector<std::pair<Value, Value>> keyed;
  for (const auto& [key, value] : input.dict_value().entries()) {
    keyed.emplace_back(FoldCase(by == "key" ? key : value, case_sensitive),
                       Value::Tuple({key, value}));
  }
  KVD_RETURN_IF_ERROR(SortKeyed(keyed, BoolArg(bound[2], false)));
  ValueList out;
  for (auto& [key, item] : keyed) out.push_back(std::move(item));
  return Value::List(std::move(out));
}

absl::StatusOr<Value> FilterSelectAttr(const Value& input, CallArgs& args) {
  return SelectOrReject(input, args, /*keep=*/true, /*by_attribute=*/true);
}
absl::StatusOr<Value> FilterRejectAttr(const Value& input, CallArgs& args) {
  return SelectOrReject(input, args, /*keep=*/false, /*by_attribute=*/true);
}
absl::StatusOr<Value> FilterSelect(const Value& input, CallArgs& args) {
  return SelectOrReject(input, args, /*keep=*/true, /*by_attribute=*/false);
}
absl::StatusOr<Value> FilterReject(const Value& input, CallArgs& args) {
  return SelectOrReject(input, args, /*keep=*/false, /*by_attribute=*/false);
}

absl::StatusOr<Value> FilterMap(const Value& input, CallArgs& args) {
  KVD_ASSIGN_OR_RETURN(ValueList items, Iterate(input));
  ValueList out;
  if (args.positional.empty()) {
    // map(attribute='x', default=d)
    KVD_JINJA_BIND_ARGS("map", "attribute", "default");
    if (!bound[0].has_value()) return absl::InvalidArgumentError("map needs a filter or attribute");
    for (const Value& item : items) {
      KVD_ASSIGN_OR_RETURN(Value v, LookupAttributePath(item, *bound[0]));
      if (v.is_undefined() && bound[1].has_value()) v = *bound[1];
      out.push_back(std::move(v));
    }
    return Value::List(std::move(out));
  }
  if (!args.positional[0].is_string()) return absl::InvalidArgumentError("filter name expected");
  const std::string name = args.positional[0].string_value();
  FilterFunction filter = FindFilter(name);
  if (filter == nullptr) return absl::InvalidArgumentError("no filter named '" + name + "'");
  for (const Value& item : items) {
    CallArgs call{ValueList(args.positional.begin() + 1, args.positional.end()), args.keyword};
    KVD_ASSIGN_OR_RETURN(Value v, filter(item, call));
    out.push_back(std::move(v));
  }
  return Value::List(std::move(out));
}

absl::StatusOr<Value> FilterUnique(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("unique", "case_sensitive", "attribute");
  KVD_ASSIGN_OR_RETURN(auto keyed, Keyed(input, bound[1], BoolArg(bound[0], false)));
  ValueList seen;
  ValueList out;
  for (auto& keyed_item : keyed) {
    // Not a structured binding: clang before 16 cannot capture one in the lambda.
    const Value& key = keyed_item.first;
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return Equals(s, key); })) {
      continue;
    }
    seen.push_back(key);
    out.push_back(std::move(keyed_item.second));
  }
  return Value::List(std::move(out));
}

absl::StatusOr<Value> FilterReverse(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("reverse");
  KVD_ASSIGN_OR_RETURN(ValueList items, Iterate(input));
  std::reverse(items.begin(), items.end());
  if (!input.is_string()) return Value::List(std::move(items));
  std::string out;
  for (const Value& c : items) out += c.string_value();
  return Value::String(std::move(out));
}

absl::StatusOr<Value> FilterSort(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("sort", "reverse", "case_sensitive", "attribute");
  KVD_ASSIGN_OR_RETURN(auto keyed, Keyed(input, bound[2], BoolArg(bound[1], false)));
  KVD_RETURN_IF_ERROR(SortKeyed(keyed, BoolArg(bound[0], false)));
  ValueList out;
  for (auto& [key, item] : keyed) out.push_back(std::move(item));
  return Value::List(std::move(out));
}

absl::StatusOr<Value> FilterMin(const Value& input, CallArgs& args) {
  return MinMax(input, args, /*want_max=*/false);
}
absl::StatusOr<Value> FilterMax(const Value& input, CallArgs& args) {
  return MinMax(input, args, /*want_max=*/true);
}

absl::StatusOr<Value> FilterSum(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("sum", "attribute", "start");
  KVD_ASSIGN_OR_RETURN(auto keyed, Keyed(input, bound[0], /*case_sensitive=*/true));
  Value total = bound[1].has_value() ? *bound[1] : Value::Int(0);
  for (const auto& [key, item] : keyed) {
    KVD_ASSIGN_OR_RETURN(total, BinaryOp("+", total, key));
  }
  return total;
}

}  // namespace kvd::text::internal::jinja
