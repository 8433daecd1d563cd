// Python operator semantics for template values.
#include "text/internal/jinja/operators.h"

#include <cctype>
#include <cmath>
#include <cstdio>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "text/internal/jinja/methods.h"
#include "text/internal/jinja/text.h"

namespace kvd::text::internal::jinja {

namespace {

absl::Status UndefinedError(const Value& value) {
  const std::string& description = value.undefined_description();
  return absl::InvalidArgumentError(description.empty() ? "value is undefined" : description);
}

bool IsIntegral(const Value& v) { return v.is_int() || v.is_bool(); }
int64_t AsInt(const Value& v) { return v.is_bool() ? v.bool_value() : v.int_value(); }

absl::Status OperandError(std::string_view op, const Value& a, const Value& b) {
  return absl::InvalidArgumentError(absl::StrCat("unsupported operand type(s) for ",
                                                 std::string(op), ": '", a.TypeName(), "' and '",
                                                 b.TypeName(), "'"));
}

absl::Status OverflowError() { return absl::InvalidArgumentError("integer overflow"); }

absl::Status TooLong() {
  return absl::InvalidArgumentError(
      absl::StrCat("string or list longer than ", kMaxStringBytes, " would be built"));
}

absl::StatusOr<Value> Repeat(const Value& sequence, int64_t times) {
  if (times < 0) times = 0;
  if (sequence.is_string()) {
    const std::string& s = sequence.string_value();
    if (!s.empty() && static_cast<uint64_t>(times) > kMaxStringBytes / s.size()) return TooLong();
    std::string out;
    out.reserve(s.size() * static_cast<size_t>(times));
    for (int64_t i = 0; i < times; ++i) out += s;
    return Value::String(std::move(out));
  }
  const ValueList& items = sequence.list_value();
  if (!items.empty() && static_cast<uint64_t>(times) > kMaxStringBytes / items.size()) {
    return TooLong();
  }
  ValueList out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
  return sequence.is_tuple() ? Value::Tuple(std::move(out)) : Value::List(std::move(out));
}

absl::StatusOr<Value> IntegerPower(int64_t base, int64_t exponent) {
  int64_t result = 1;
  while (exponent > 0) {
    if ((exponent & 1) != 0 && __builtin_mul_overflow(result, base, &result)) {
      return OverflowError();
    }
    exponent >>= 1;
    if (exponent > 0 && __builtin_mul_overflow(base, base, &base)) return OverflowError();
  }
  return Value::Int(result);
}

absl::StatusOr<Value> Arithmetic(std::string_view op, const Value& a, const Value& b) {
  if (IsIntegral(a) && IsIntegral(b)) {
    const int64_t x = AsInt(a);
    const int64_t y = AsInt(b);
    int64_t r = 0;
    if (op == "+") {
      if (__builtin_add_overflow(x, y, &r)) return OverflowError();
      return Value::Int(r);
    }
    if (op == "-") {
      if (__builtin_sub_overflow(x, y, &r)) return OverflowError();
      return Value::Int(r);
    }
    if (op == "*") {
      if (__builtin_mul_overflow(x, y, &r)) return OverflowError();
      return Value::Int(r);
    }
    if (op == "/") {
      if (y == 0) return absl::InvalidArgumentError("division by zero");
      return Value::Float(static_cast<double>(x) / static_cast<double>(y));
    }
    if (op == "//" || op == "%") {
      if (y == 0) return absl::InvalidArgumentError("integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) return OverflowError();
      int64_t q = x / y;
      int64_t m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {  // Python rounds toward negative infinity.
        --q;
        m += y;
      }
      return Value::Int(op == "//" ? q : m);
    }
    if (y < 0) return Value::Float(std::pow(static_cast<double>(x), static_cast<double>(y)));
    return IntegerPower(x, y);
  }
  const double x = a.AsDouble();
  const double y = b.AsDouble();
  if (op == "+") return Value::Float(x + y);
  if (op == "-") return Value::Float(x - y);
  if (op == "*") return Value::Float(x * y);
  if (op == "**") return Value::Float(std::pow(x, y));
  if (y == 0) return absl::InvalidArgumentError("float division by zero");
  if (op == "/") return Value::Float(x / y);
  const double q = std::floor(x / y);
  if (op == "//") return Value::Float(q);
  double m = std::fmod(x, y);
  if (m != 0 && ((m < 0) != (y < 0))) m += y;
  return Value::Float(m);
}

// Python's slice.indices(): clamps start and stop for a sequence of `length` items.
absl::Status SliceIndices(int64_t length, const std::optional<Value>& start_arg,
                          const std::optional<Value>& stop_arg,
                          const std::optional<Value>& step_arg, int64_t* start, int64_t* stop,
                          int64_t* step) {
  auto bound = [](const std::optional<Value>& v, int64_t* out) -> absl::StatusOr<bool> {
    if (!v.has_value() || v->is_none()) return false;
    if (!IsIntegral(*v)) {
      return absl::InvalidArgumentError("slice indices must be integers or None");
    }
    *out = AsInt(*v);
    return true;
  };
  *step = 1;
  absl::StatusOr<bool> has = bound(step_arg, step);
  if (!has.ok()) return has.status();
  if (*step == 0) return absl::InvalidArgumentError("slice step cannot be zero");
  const bool forward = *step > 0;
  auto clamp = [&](const std::optional<Value>& v, int64_t fallback, int64_t* out) -> absl::Status {
    absl::StatusOr<bool> given = bound(v, out);
    if (!given.ok()) return given.status();
    if (!*given) {
      *out = fallback;
      return absl::OkStatus();
    }
    if (*out < 0) {
      *out += length;
      if (*out < 0) *out = forward ? 0 : -1;
    } else if (*out >= length) {
      *out = forward ? length : length - 1;
    }
    return absl::OkStatus();
  };
  if (absl::Status s = clamp(start_arg, forward ? 0 : length - 1, start); !s.ok()) return s;
  return clamp(stop_arg, forward ? length : -1, stop);
}

}  // namespace

absl::StatusOr<Value> BinaryOp(std::string_view op, const Value& a, const Value& b) {
  if (a.is_undefined()) return UndefinedError(a);
  if (b.is_undefined()) return UndefinedError(b);
  if (a.is_number() && b.is_number()) return Arithmetic(op, a, b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      if (a.string_value().size() + b.string_value().size() > kMaxStringBytes) return TooLong();
      return Value::String(a.string_value() + b.string_value());
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
      ValueList items = a.list_value();
      items.insert(items.end(), b.list_value().begin(), b.list_value().end());
      return a.is_tuple() ? Value::Tuple(std::move(items)) : Value::List(std::move(items));
    }
  } else if (op == "*") {
    if ((a.is_string() || a.is_list()) && IsIntegral(b)) return Repeat(a, AsInt(b));
    if (IsIntegral(a) && (b.is_string() || b.is_list())) return Repeat(b, AsInt(a));
  } else if (op == "%" && a.is_string()) {
    return FormatPercent(a.string_value(), b);
  }
  return OperandError(op, a, b);
}

absl::StatusOr<Value> UnaryOp(std::string_view op, const Value& a) {
  if (a.is_undefined()) return UndefinedError(a);
  if (!a.is_number()) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad operand type for unary ", std::string(op), ": '", a.TypeName(), "'"));
  }
  if (op == "+") return IsIntegral(a) ? Value::Int(AsInt(a)) : a;
  if (a.is_float()) return Value::Float(-a.float_value());
  if (AsInt(a) == INT64_MIN) return OverflowError();
  return Value::Int(-AsInt(a));
}

absl::StatusOr<bool> Contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kString:
      if (!item.is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat("'in <string>' requires string as left operand, not ", item.TypeName()));
      }
      return container.string_value().find(item.string_value()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& element : container.list_value()) {
        if (Equals(element, item)) return true;
      }
      return false;
    case Value::Kind::kDict:
      return container.dict_value().Find(item) != nullptr;
    case Value::Kind::kNamespace:
      return item.is_string() &&
             container.namespace_value().attributes.Find(item.string_value()) != nullptr;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("argument of type '", container.TypeName(), "' is not iterable"));
  }
}

absl::StatusOr<Value> GetAttribute(const Value& object, std::string_view name) {
  if (object.is_undefined()) return UndefinedError(object);
  if (std::optional<Value> method = BindMethod(object, name); method.has_value()) {
    return *std::move(method);
  }
  const Value* found = nullptr;
  if (object.is_dict()) found = object.dict_value().Find(name);
  if (object.is_namespace()) found = object.namespace_value().attributes.Find(name);
  if (found != nullptr) return *found;
  return Value::Undefined(
      absl::StrCat("'", object.TypeName(), " object' has no attribute '", std::string(name), "'"));
}

absl::StatusOr<Value> GetItem(const Value& object, const Value& key) {
  if (object.is_undefined()) return UndefinedError(object);
  if (object.is_dict()) {
    if (const Value* found = object.dict_value().Find(key); found != nullptr) return *found;
  } else if ((object.is_list() || object.is_string()) && IsIntegral(key)) {
    int64_t index = AsInt(key);
    if (object.is_list()) {
      const auto size = static_cast<int64_t>(object.list_value().size());
      if (index < 0) index += size;
      if (index >= 0 && index < size) return object.list_value()[static_cast<size_t>(index)];
    } else {
      const std::vector<std::string_view> chars = CodePoints(object.string_value());
      const auto size = static_cast<int64_t>(chars.size());
      if (index < 0) index += size;
      if (index >= 0 && index < size) {
        return Value::String(std::string(chars[static_cast<size_t>(index)]));
      }
    }
    return Value::Undefined(
        absl::StrCat("'", object.TypeName(), " object' has no element ", AsInt(key)));
  }
  if (key.is_string()) return GetAttribute(object, key.string_value());
  return Value::Undefined(
      absl::StrCat("'", object.TypeName(), " object' has no element ", key.Repr()));
}

absl::StatusOr<Value> Slice(const Value& object, const std::optional<Value>& start_arg,
                            const std::optional<Value>& stop_arg,
                            const std::optional<Value>& step_arg) {
  if (object.is_undefined()) return UndefinedError(object);
  if (!object.is_list() && !object.is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", object.TypeName(), "' object is not subscriptable"));
  }
  std::vector<std::string_view> chars;
  if (object.is_string()) chars = CodePoints(object.string_value());
  const auto length =
      static_cast<int64_t>(object.is_string() ? chars.size() : object.list_value().size());
  int64_t start = 0;
  int64_t stop = 0;
  int64_t step = 1;
  if (absl::Status s = SliceIndices(length, start_arg, stop_arg, step_arg, &start, &stop, &step);
      !s.ok()) {
    return s;
  }
  std::string text;
  ValueList items;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (object.is_string()) {
      text += chars[static_cast<size_t>(i)];
    } else {
      items.push_back(object.list_value()[static_cast<size_t>(i)]);
    }
  }
  if (object.is_string()) return Value::String(std::move(text));
  return object.is_tuple() ? Value::Tuple(std::move(items)) : Value::List(std::move(items));
}

absl::StatusOr<ValueList> Iterate(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return ValueList();
    case Value::Kind::kList:
      return value.list_value();
    case Value::Kind::kDict: {
      ValueList keys;
      for (const auto& [key, item] : value.dict_value().entries()) keys.push_back(key);
      return keys;
    }
    case Value::Kind::kString: {
      ValueList chars;
      for (std::string_view c : CodePoints(value.string_value())) {
        chars.push_back(Value::String(std::string(c)));
      }
      return chars;
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("'", value.TypeName(), "' object is not iterable"));
  }
}

absl::StatusOr<Value> FormatPercent(const std::string& format, const Value& args) {
  ValueList values;
  if (args.is_tuple()) {
    values = args.list_value();
  } else {
    values.push_back(args);
  }
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    // %[flags][width][.precision]conversion
    size_t j = i + 1;
    while (j < format.size() && std::string_view("-+ 0#").find(format[j]) != std::string::npos) {
      ++j;
    }
    while (j < format.size() && std::isdigit(static_cast<unsigned char>(format[j]))) ++j;
    if (j < format.size() && format[j] == '.') {
      ++j;
      while (j < format.size() && std::isdigit(static_cast<unsigned char>(format[j]))) ++j;
    }
    if (j >= format.size()) return absl::InvalidArgumentError("incomplete format");
    const char conversion = format[j];
    const std::string spec = format.substr(i, j - i);
    i = j;
    if (conversion == '%') {
      out += '%';
      continue;
    }
    if (next >= values.size()) {
      return absl::InvalidArgumentError("not enough arguments for format string");
    }
    const Value& value = values[next++];
    char buffer[128];
    if (conversion == 's' || conversion == 'r') {
      const std::string text = conversion == 's' ? value.Str() : value.Repr();
      if (spec == "%") {
        out += text;
        continue;
      }
      std::snprintf(buffer, sizeof(buffer), (spec + "s").c_str(), text.c_str());
    } else if ((conversion == 'd' || conversion == 'i') && value.is_number()) {
      const long long n = value.is_float() ? static_cast<long long>(value.float_value())
                                           : static_cast<long long>(AsInt(value));
      std::snprintf(buffer, sizeof(buffer), (spec + "lld").c_str(), n);
    } else if (conversion == 'f' && value.is_number()) {
      std::snprintf(buffer, sizeof(buffer), (spec + "f").c_str(), value.AsDouble());
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unsupported format conversion '%",
                                                     std::string(1, conversion), "' for ",
                                                     value.TypeName()));
    }
    out += buffer;
  }
  if (next < values.size()) {
    return absl::InvalidArgumentError("not all arguments converted during string formatting");
  }
  return Value::String(std::move(out));
}

}  // namespace kvd::text::internal::jinja
