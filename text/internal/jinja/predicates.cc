// jinja2's tests, with Python's type rules: bool counts as a number but not as an integer,
// and Undefined (empty) is both iterable and a sequence.
#include "text/internal/jinja/predicates.h"

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "base/status_macros.h"
#include "text/internal/jinja/call_args.h"
#include "text/internal/jinja/operators.h"
#include "text/internal/jinja/text.h"

namespace kvd::text::internal::jinja {

namespace {

// A test of the value alone: `x is string`.
template <bool (*Check)(const Value&)>
absl::StatusOr<bool> Unary(const Value& value, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("test");
  return Check(value);
}

bool IsDefined(const Value& v) { return !v.is_undefined(); }
bool IsUndefined(const Value& v) { return v.is_undefined(); }
bool IsNone(const Value& v) { return v.is_none(); }
bool IsString(const Value& v) { return v.is_string(); }
bool IsNumber(const Value& v) { return v.is_number(); }
bool IsInteger(const Value& v) { return v.is_int(); }
bool IsFloat(const Value& v) { return v.is_float(); }
bool IsBoolean(const Value& v) { return v.is_bool(); }
bool IsMapping(const Value& v) { return v.is_dict(); }
bool IsIterable(const Value& v) {
  return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
}
bool IsSequence(const Value& v) {
  return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
}
bool IsTrue(const Value& v) { return v.is_bool() && v.bool_value(); }
bool IsFalse(const Value& v) { return v.is_bool() && !v.bool_value(); }
bool IsCallable(const Value& v) { return v.is_callable(); }
bool IsLower(const Value& v) {
  return v.is_string() && ToLower(v.string_value()) == v.string_value();
}
bool IsUpper(const Value& v) {
  return v.is_string() && ToUpper(v.string_value()) == v.string_value();
}
bool IsEscaped(const Value&) { return false; }

absl::StatusOr<int64_t> IntegerOperand(const Value& v) {
  if (v.is_int()) return v.int_value();
  if (v.is_bool()) return static_cast<int64_t>(v.bool_value());
  return absl::InvalidArgumentError("expected an integer, got " + v.TypeName());
}

template <bool kEven>
absl::StatusOr<bool> Parity(const Value& value, CallArgs& args) {
  KVD_JINJA_BIND_ARGS(kEven ? "even" : "odd");
  KVD_ASSIGN_OR_RETURN(int64_t i, IntegerOperand(value));
  return (i % 2 == 0) == kEven;
}

absl::StatusOr<bool> DivisibleBy(const Value& value, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("divisibleby", "num");
  if (!bound[0].has_value()) return absl::InvalidArgumentError("divisibleby needs a number");
  KVD_ASSIGN_OR_RETURN(int64_t n, IntegerOperand(*bound[0]));
  KVD_ASSIGN_OR_RETURN(int64_t i, IntegerOperand(value));
  if (n == 0) return absl::InvalidArgumentError("integer division or modulo by zero");
  if (n == -1) return true;
  return i % n == 0;
}

// Comparison tests: eq/equalto/==, ne/!=, lt/<, le/<=, gt/>, ge/>=.
template <int kOp>
absl::StatusOr<bool> Comparison(const Value& value, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("comparison", "other");
  if (!bound[0].has_value()) return absl::InvalidArgumentError("comparison test needs a value");
  if (kOp == 0) return Equals(value, *bound[0]);
  if (kOp == 1) return !Equals(value, *bound[0]);
  KVD_ASSIGN_OR_RETURN(int c, Compare(value, *bound[0]));
  switch (kOp) {
    case 2:
      return c < 0;
    case 3:
      return c <= 0;
    case 4:
      return c > 0;
    default:
      return c >= 0;
  }
}

absl::StatusOr<bool> In(const Value& value, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("in", "seq");
  if (!bound[0].has_value()) return absl::InvalidArgumentError("in test needs a container");
  return Contains(*bound[0], value);
}

absl::StatusOr<bool> SameAs(const Value& value, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("sameas", "other");
  if (!bound[0].has_value()) return absl::InvalidArgumentError("sameas needs a value");
  const Value& other = *bound[0];
  // Identity for singletons (None, True, False); equality is the closest stand-in otherwise.
  if (value.kind() != other.kind()) return false;
  return Equals(value, other);
}

}  // namespace

TestFunction FindTest(std::string_view name) {
  static const auto* const kTests = new absl::flat_hash_map<std::string, TestFunction>{
      {"defined", Unary<IsDefined>},
      {"undefined", Unary<IsUndefined>},
      {"none", Unary<IsNone>},
      {"string", Unary<IsString>},
      {"number", Unary<IsNumber>},
      {"integer", Unary<IsInteger>},
      {"float", Unary<IsFloat>},
      {"boolean", Unary<IsBoolean>},
      {"mapping", Unary<IsMapping>},
      {"iterable", Unary<IsIterable>},
      {"sequence", Unary<IsSequence>},
      {"true", Unary<IsTrue>},
      {"false", Unary<IsFalse>},
      {"callable", Unary<IsCallable>},
      {"lower", Unary<IsLower>},
      {"upper", Unary<IsUpper>},
      {"escaped", Unary<IsEscaped>},
      {"even", Parity<true>},
      {"odd", Parity<false>},
      {"divisibleby", DivisibleBy},
      {"eq", Comparison<0>},
      {"equalto", Comparison<0>},
      {"==", Comparison<0>},
      {"ne", Comparison<1>},
      {"!=", Comparison<1>},
      {"lt", Comparison<2>},
      {"lessthan", Comparison<2>},
      {"<", Comparison<2>},
      {"le", Comparison<3>},
      {"<=", Comparison<3>},
      {"gt", Comparison<4>},
      {"greaterthan", Comparison<4>},
      {">", Comparison<4>},
      {"ge", Comparison<5>},
      {">=", Comparison<5>},
      {"in", In},
      {"sameas", SameAs},
  };
  const auto it = kTests->find(std::string(name));
  return it == kTests->end() ? nullptr : it->second;
}

}  // namespace kvd::text::internal::jinja
