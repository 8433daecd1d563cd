// Values of the chat-template language: Python's None, bool, int, float, str, list, tuple and
// dict plus jinja2's Undefined, namespace objects and callables, with Python's rules for
// truthiness, str(), repr(), equality and ordering.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"

namespace kvd::text::internal::jinja {

class Value;
using ValueList = std::vector<Value>;

// An insertion-ordered mapping, like a Python dict. Lookups are linear: template dicts and
// JSON message objects hold a handful of keys.
class ValueDict {
 public:
  const Value* Find(const Value& key) const;
  const Value* Find(std::string_view key) const;
  // Replaces the value of an existing key or appends the pair.
  void Set(Value key, Value value);
  // Appends a pair whose key the caller knows is absent (JSON object members, loop fields).
  void Append(Value key, Value value);
  const std::vector<std::pair<Value, Value>>& entries() const { return entries_; }
  size_t size() const;

 private:
  std::vector<std::pair<Value, Value>> entries_;
};

// Arguments of a call: `f(1, 2, key=3)`.
struct CallArgs {
  ValueList positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

using NativeFunction = std::function<absl::StatusOr<Value>(CallArgs& args)>;

// A function, macro or bound method.
struct Callable {
  std::string name;
  NativeFunction function;
};

// The mutable attribute bag `namespace(...)` creates, so loop bodies can carry state out.
struct Namespace {
  ValueDict attributes;
};

class Value {
 public:
  enum class Kind {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kNamespace,
    kCallable
  };

  // Undefined with no description.
  Value() = default;

  // `description` says why it is undefined ("'x' is undefined"); it becomes the error message
  // when the template uses the value in a way jinja2 refuses.
  static Value Undefined(std::string description);
  static Value None();
  static Value Bool(bool b);
  static Value Int(int64_t i);
  static Value Float(double f);
  static Value String(std::string s);
  static Value List(ValueList items);
  static Value Tuple(ValueList items);
  static Value Dict(ValueDict dict);
  static Value MakeNamespace(std::shared_ptr<Namespace> ns);
  static Value Function(std::string name, NativeFunction function);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  // Nesting of lists, tuples and dicts: 0 for scalars, 1 + the deepest element otherwise.
  // The interpreter bounds it so printing and comparing cannot exhaust the stack.
  int depth() const { return depth_; }
  // Python numbers: bool, int and float.
  bool is_number() const { return is_bool() || is_int() || is_float(); }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_tuple() const { return kind_ == Kind::kList && is_tuple_; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const { return kind_ == Kind::kNamespace; }
  bool is_callable() const { return kind_ == Kind::kCallable; }

  // Accessors; each requires the matching kind.
  bool bool_value() const { return std::get<bool>(data_); }
  int64_t int_value() const { return std::get<int64_t>(data_); }
  double float_value() const { return std::get<double>(data_); }
  const std::string& string_value() const { return *std::get<StringPtr>(data_); }
  const ValueList& list_value() const { return *std::get<ListPtr>(data_); }
  const ValueDict& dict_value() const { return *std::get<DictPtr>(data_); }
  Namespace& namespace_value() const { return *std::get<NamespacePtr>(data_); }
  const Callable& callable_value() const { return *std::get<CallablePtr>(data_); }
  // For undefined values: why it is undefined.
  const std::string& undefined_description() const;

  // A number as a double (bool and int converted). Requires is_number().
  double AsDouble() const;
  // Python's bool(): false for undefined, none, 0, 0.0 and empty str/list/dict.
  bool Truthy() const;
  // Python's str(), as `{{ value }}` prints it; undefined prints as "".
  std::string Str() const;
  // Python's repr(), used for elements of printed lists and dicts.
  std::string Repr() const;
  // Python's type name for error messages: 'str', 'int', 'NoneType'...
  std::string TypeName() const;

 private:
  using StringPtr = std::shared_ptr<const std::string>;
  using ListPtr = std::shared_ptr<const ValueList>;
  using DictPtr = std::shared_ptr<const ValueDict>;
  using NamespacePtr = std::shared_ptr<Namespace>;
  using CallablePtr = std::shared_ptr<const Callable>;

  Kind kind_ = Kind::kUndefined;
  bool is_tuple_ = false;
  int depth_ = 0;
  // Undefined values keep their description in the StringPtr alternative.
  std::variant<std::monostate, bool, int64_t, double, StringPtr, ListPtr, DictPtr, NamespacePtr,
               CallablePtr>
      data_;
};

// Python's repr() of a float: shortest round-trip digits, "1.0", "1e-05", "1e+16", "inf", "nan".
std::string FormatFloat(double value);
// Python's repr() of a str: single quotes unless the text holds ' and no ".
std::string QuoteString(std::string_view text);

// Python's ==: numbers compare by value (True == 1 == 1.0), sequences and dicts element-wise,
// two undefined values are equal, anything else of different types is unequal.
bool Equals(const Value& a, const Value& b);
// Python's ordering for <, >, sorting, min and max: numbers, strings (by code point) and
// sequences (lexicographic). -1, 0 or 1; InvalidArgument for other types.
absl::StatusOr<int> Compare(const Value& a, const Value& b);

}  // namespace kvd::text::internal::jinja
