// Python semantics of template values: printing, truthiness, equality and ordering.
#include "text/internal/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kvd::text::internal::jinja {

const Value* ValueDict::Find(const Value& key) const {
  for (const auto& [k, v] : entries_) {
    if (Equals(k, key)) return &v;
  }
  return nullptr;
}

const Value* ValueDict::Find(std::string_view key) const {
  for (const auto& [k, v] : entries_) {
    if (k.is_string() && k.string_value() == key) return &v;
  }
  return nullptr;
}

void ValueDict::Set(Value key, Value value) {
  for (auto& [k, v] : entries_) {
    if (Equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

void ValueDict::Append(Value key, Value value) {
  entries_.emplace_back(std::move(key), std::move(value));
}

size_t ValueDict::size() const { return entries_.size(); }

Value Value::Undefined(std::string description) {
  Value v;
  v.data_ = std::make_shared<const std::string>(std::move(description));
  return v;
}

Value Value::None() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value Value::Bool(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.data_ = b;
  return v;
}

Value Value::Int(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.data_ = i;
  return v;
}

Value Value::Float(double f) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.data_ = f;
  return v;
}

Value Value::String(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.data_ = std::make_shared<const std::string>(std::move(s));
  return v;
}

Value Value::List(ValueList items) {
  Value v;
  v.kind_ = Kind::kList;
  for (const Value& item : items) v.depth_ = std::max(v.depth_, item.depth_ + 1);
  if (v.depth_ == 0) v.depth_ = 1;
  v.data_ = std::make_shared<const ValueList>(std::move(items));
  return v;
}

Value Value::Tuple(ValueList items) {
  Value v = List(std::move(items));
  v.is_tuple_ = true;
  return v;
}

Value Value::Dict(ValueDict dict) {
  Value v;
  v.kind_ = Kind::kDict;
  v.depth_ = 1;
  for (const auto& [key, value] : dict.entries()) {
    v.depth_ = std::max({v.depth_, key.depth_ + 1, value.depth_ + 1});
  }
  v.data_ = std::make_shared<const ValueDict>(std::move(dict));
  return v;
}

Value Value::MakeNamespace(std::shared_ptr<Namespace> ns) {
  Value v;
  v.kind_ = Kind::kNamespace;
  v.data_ = std::move(ns);
  return v;
}

Value Value::Function(std::string name, NativeFunction function) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.data_ = std::make_shared<const Callable>(Callable{std::move(name), std::move(function)});
  return v;
}

const std::string& Value::undefined_description() const {
  static const std::string* const kEmpty = new std::string();
  const auto* description = std::get_if<StringPtr>(&data_);
  return description != nullptr && *description != nullptr ? **description : *kEmpty;
}

double Value::AsDouble() const {
  switch (kind_) {
    case Kind::kBool:
      return bool_value() ? 1.0 : 0.0;
    case Kind::kInt:
      return static_cast<double>(int_value());
    default:
      return float_value();
  }
}

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return bool_value();
    case Kind::kInt:
      return int_value() != 0;
    case Kind::kFloat:
      return float_value() != 0.0;
    case Kind::kString:
      return !string_value().empty();
    case Kind::kList:
      return !list_value().empty();
    case Kind::kDict:
      return dict_value().size() != 0;
    case Kind::kNamespace:
    case Kind::kCallable:
      return true;
  }
  return false;
}

std::string Value::Str() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "";
    case Kind::kString:
      return string_value();
    default:
      return Repr();
  }
}

namespace {

std::string ReprItems(const ValueList& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    out += items[i].Repr();
  }
  return out;
}

std::string ReprDict(const ValueDict& dict) {
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : dict.entries()) {
    if (!first) out += ", ";
    first = false;
    absl::StrAppend(&out, k.Repr(), ": ", v.Repr());
  }
  return out + "}";
}

}  // namespace

std::string Value::Repr() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "";
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return bool_value() ? "True" : "False";
    case Kind::kInt:
      return absl::StrCat(int_value());
    case Kind::kFloat:
      return FormatFloat(float_value());
    case Kind::kString:
      return QuoteString(string_value());
    case Kind::kList:
      if (!is_tuple_) return "[" + ReprItems(list_value()) + "]";
      return "(" + ReprItems(list_value()) + (list_value().size() == 1 ? ",)" : ")");
    case Kind::kDict:
      return ReprDict(dict_value());
    case Kind::kNamespace:
      // Contents are not printed: a namespace may hold itself.
      return "<Namespace>";
    case Kind::kCallable:
      return "<function " + callable_value().name + ">";
  }
  return "";
}

std::string Value::TypeName() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return is_tuple_ ? "tuple" : "list";
    case Kind::kDict:
      return "dict";
    case Kind::kNamespace:
      return "Namespace";
    case Kind::kCallable:
      return "function";
  }
  return "object";
}

std::string FormatFloat(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // Shortest round-trip digits in scientific form, e.g. "-1.2345e+02", then laid out the way
  // Python's repr() does: positional when the exponent is in [-5, 16), scientific otherwise.
  char buffer[64];
  auto [end, ec] =
      std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  std::string_view text(buffer, static_cast<size_t>(end - buffer));
  std::string out;
  if (!text.empty() && text.front() == '-') {
    out = "-";
    text.remove_prefix(1);
  }
  const size_t e_pos = text.find('e');
  std::string digits;
  for (char c : text.substr(0, e_pos)) {
    if (c != '.') digits += c;
  }
  const int exponent = std::atoi(std::string(text.substr(e_pos + 1)).c_str());
  const int n = static_cast<int>(digits.size());
  if (exponent < -4 || exponent >= 16) {
    out += digits.substr(0, 1);
    if (n > 1) absl::StrAppend(&out, ".", digits.substr(1));
    absl::StrAppendFormat(&out, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out;
  }
  const int point = exponent + 1;  // Digits before the decimal point.
  if (point <= 0) {
    absl::StrAppend(&out, "0.", std::string(static_cast<size_t>(-point), '0'), digits);
  } else if (point >= n) {
    absl::StrAppend(&out, digits, std::string(static_cast<size_t>(point - n), '0'), ".0");
  } else {
    absl::StrAppend(&out, digits.substr(0, point), ".", digits.substr(point));
  }
  return out;
}

std::string QuoteString(std::string_view text) {
  const bool use_double =
      text.find('\'') != std::string_view::npos && text.find('"') == std::string_view::npos;
  const char quote = use_double ? '"' : '\'';
  std::string out(1, quote);
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      absl::StrAppendFormat(&out, "\\x%02x", u);
    } else {
      out += c;
    }
  }
  out += quote;
  return out;
}

bool Equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.AsDouble() == b.AsDouble();
    const int64_t x = a.is_bool() ? a.bool_value() : a.int_value();
    const int64_t y = b.is_bool() ? b.bool_value() : b.int_value();
    return x == y;
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.string_value() == b.string_value();
    case Value::Kind::kList: {
      if (a.is_tuple() != b.is_tuple()) return false;
      const ValueList& x = a.list_value();
      const ValueList& y = b.list_value();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!Equals(x[i], y[i])) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      const ValueDict& x = a.dict_value();
      const ValueDict& y = b.dict_value();
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.entries()) {
        const Value* other = y.Find(k);
        if (other == nullptr || !Equals(v, *other)) return false;
      }
      return true;
    }
    case Value::Kind::kNamespace:
      return &a.namespace_value() == &b.namespace_value();
    case Value::Kind::kCallable:
      return &a.callable_value() == &b.callable_value();
    default:
      return false;
  }
}

absl::StatusOr<int> Compare(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      const double x = a.AsDouble();
      const double y = b.AsDouble();
      return x < y ? -1 : (y < x ? 1 : 0);
    }
    const int64_t x = a.is_bool() ? a.bool_value() : a.int_value();
    const int64_t y = b.is_bool() ? b.bool_value() : b.int_value();
    return x < y ? -1 : (y < x ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.string_value().compare(b.string_value());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const ValueList& x = a.list_value();
    const ValueList& y = b.list_value();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (Equals(x[i], y[i])) continue;
      return Compare(x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  return absl::InvalidArgumentError(absl::StrCat("'<' not supported between instances of '",
                                                 a.TypeName(), "' and '", b.TypeName(), "'"));
}

}  // namespace kvd::text::internal::jinja
