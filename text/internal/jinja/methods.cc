// Python's str, dict and list methods for chat templates.
#include "text/internal/jinja/methods.h"

#include <algorithm>
#include <cctype>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "text/internal/jinja/call_args.h"
#include "text/internal/jinja/text.h"

namespace kvd::text::internal::jinja {

namespace {

absl::StatusOr<Value> StripMethod(const Value& self, CallArgs& args, bool left, bool right) {
  KVD_JINJA_BIND_ARGS("strip", "chars");
  KVD_ASSIGN_OR_RETURN(std::optional<std::string> chars, OptionalStringArg(bound[0], "strip arg"));
  return Value::String(Strip(self.string_value(), chars, left, right));
}

absl::StatusOr<Value> AffixMethod(const Value& self, CallArgs& args, bool prefix) {
  KVD_JINJA_BIND_ARGS(prefix ? "startswith" : "endswith", "affix");
  if (!bound[0].has_value()) return absl::InvalidArgumentError("startswith() takes 1 argument");
  ValueList candidates;
  if (bound[0]->is_tuple()) {
    candidates = bound[0]->list_value();
  } else {
    candidates.push_back(*bound[0]);
  }
  const std::string& text = self.string_value();
  for (const Value& candidate : candidates) {
    if (!candidate.is_string()) {
      return absl::InvalidArgumentError(
          "startswith/endswith argument must be str or a tuple of str");
    }
    const std::string& affix = candidate.string_value();
    if (affix.size() > text.size()) continue;
    if (prefix ? text.compare(0, affix.size(), affix) == 0
               : text.compare(text.size() - affix.size(), affix.size(), affix) == 0) {
      return Value::Bool(true);
    }
  }
  return Value::Bool(false);
}

Value StringList(std::vector<std::string> parts) {
  ValueList items;
  items.reserve(parts.size());
  for (std::string& part : parts) items.push_back(Value::String(std::move(part)));
  return Value::List(std::move(items));
}

absl::StatusOr<Value> SplitMethod(const Value& self, CallArgs& args, bool from_right) {
  KVD_JINJA_BIND_ARGS("split", "sep", "maxsplit");
  KVD_ASSIGN_OR_RETURN(std::optional<std::string> sep,
                       OptionalStringArg(bound[0], "split separator"));
  KVD_ASSIGN_OR_RETURN(int64_t max_split, IntArg(bound[1], "maxsplit", -1));
  if (sep.has_value() && sep->empty()) return absl::InvalidArgumentError("empty separator");
  const std::string& text = self.string_value();
  if (!from_right || max_split < 0) return StringList(Split(text, sep, max_split));
  // rsplit with a limit: split the reversed text by the reversed separator, then undo.
  std::string reversed(text.rbegin(), text.rend());
  std::optional<std::string> reversed_sep;
  if (sep.has_value()) reversed_sep = std::string(sep->rbegin(), sep->rend());
  std::vector<std::string> parts = Split(reversed, reversed_sep, max_split);
  std::reverse(parts.begin(), parts.end());
  for (std::string& part : parts) std::reverse(part.begin(), part.end());
  return StringList(std::move(parts));
}

absl::StatusOr<Value> SplitLines(const Value& self, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("splitlines");
  std::vector<std::string> lines;
  const std::string& text = self.string_value();
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n' && text[i] != '\r') continue;
    lines.push_back(text.substr(start, i - start));
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
    start = i + 1;
  }
  if (start < text.size()) lines.push_back(text.substr(start));
  return StringList(std::move(lines));
}

absl::StatusOr<Value> CaseMethod(const Value& self, CallArgs& args,
                                 std::string (*change)(std::string_view)) {
  KVD_JINJA_BIND_ARGS("str method");
  return Value::String(change(self.string_value()));
}

absl::StatusOr<Value> ReplaceMethod(const Value& self, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("replace", "old", "new", "count");
  KVD_ASSIGN_OR_RETURN(std::string old, StringArg(bound[0], "replace() argument 1", ""));
  KVD_ASSIGN_OR_RETURN(std::string replacement, StringArg(bound[1], "replace() argument 2", ""));
  KVD_ASSIGN_OR_RETURN(int64_t count, IntArg(bound[2], "replace() count", -1));
  return Value::String(Replace(self.string_value(), old, replacement, count));
}

absl::StatusOr<Value> JoinMethod(const Value& self, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("join", "iterable");
  if (!bound[0].has_value()) return absl::InvalidArgumentError("join() takes 1 argument");
  std::string out;
  size_t index = 0;
  if (!bound[0]->is_list()) return absl::InvalidArgumentError("join() argument must be a list");
  for (const Value& item : bound[0]->list_value()) {
    if (!item.is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sequence item ", index, ": expected str instance, ", item.TypeName(), " found"));
    }
    if (index++ > 0) out += self.string_value();
    out += item.string_value();
  }
  return Value::String(std::move(out));
}

absl::StatusOr<Value> FindMethod(const Value& self, CallArgs& args, bool from_right) {
  KVD_JINJA_BIND_ARGS("find", "sub");
  KVD_ASSIGN_OR_RETURN(std::string sub, StringArg(bound[0], "find() argument", ""));
  const std::string& text = self.string_value();
  const size_t at = from_right ? text.rfind(sub) : text.find(sub);
  if (at == std::string::npos) return Value::Int(-1);
  return Value::Int(static_cast<int64_t>(CodePointCount(std::string_view(text).substr(0, at))));
}

absl::StatusOr<Value> CountMethod(const Value& self, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("count", "x");
  if (!bound[0].has_value()) return absl::InvalidArgumentError("count() takes 1 argument");
  if (self.is_list()) {
    int64_t n = 0;
    for (const Value& item : self.list_value()) n += Equals(item, *bound[0]) ? 1 : 0;
    return Value::Int(n);
  }
  KVD_ASSIGN_OR_RETURN(std::string sub, StringArg(bound[0], "count() argument", ""));
  return Value::Int(CountOccurrences(self.string_value(), sub));
}

absl::StatusOr<Value> AffixRemoval(const Value& self, CallArgs& args, bool prefix) {
  KVD_JINJA_BIND_ARGS("removeprefix", "affix");
  KVD_ASSIGN_OR_RETURN(std::string affix, StringArg(bound[0], "argument", ""));
  std::string text = self.string_value();
  if (affix.size() <= text.size()) {
    if (prefix && text.compare(0, affix.size(), affix) == 0)
      return Value::String(text.substr(affix.size()));
    if (!prefix && text.compare(text.size() - affix.size(), affix.size(), affix) == 0) {
      text.resize(text.size() - affix.size());
    }
  }
  return Value::String(std::move(text));
}

absl::StatusOr<Value> ClassMethod(const Value& self, CallArgs& args, int (*predicate)(int)) {
  KVD_JINJA_BIND_ARGS("str method");
  const std::string& text = self.string_value();
  return Value::Bool(!text.empty() && std::all_of(text.begin(), text.end(), [&](char c) {
    return predicate(static_cast<unsigned char>(c)) != 0;
  }));
}

// str.format with "{}", "{0}", "{name}", "!r"/"!s" conversions and "{{"/"}}"; format specs
// after ':' are not supported.
absl::StatusOr<Value> FormatMethod(const Value& self, CallArgs& args) {
  const std::string& format = self.string_value();
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if (c == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}') ++i;
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = format.find('}', i);
    if (close == std::string::npos) {
      return absl::InvalidArgumentError("Single '{' encountered in format string");
    }
    std::string field = format.substr(i + 1, close - i - 1);
    i = close;
    char conversion = 's';
    if (const size_t bang = field.find('!'); bang != std::string::npos) {
      conversion = bang + 1 < field.size() ? field[bang + 1] : 's';
      field.resize(bang);
    }
    if (field.find(':') != std::string::npos) {
      return absl::InvalidArgumentError("format specs are not supported in str.format");
    }
    const Value* value = nullptr;
    if (field.empty() || std::all_of(field.begin(), field.end(), ::isdigit)) {
      const size_t index = field.empty() ? auto_index++ : std::stoul(field);
      if (index < args.positional.size()) value = &args.positional[index];
    } else {
      for (const auto& [name, v] : args.keyword) {
        if (name == field) value = &v;
      }
    }
    if (value == nullptr) {
      return absl::InvalidArgumentError("format field '" + field + "' has no argument");
    }
    out += conversion == 'r' ? value->Repr() : value->Str();
  }
  return Value::String(std::move(out));
}

absl::StatusOr<Value> StringMethod(std::string_view name, const Value& self, CallArgs& args) {
  if (name == "strip") return StripMethod(self, args, true, true);
  if (name == "lstrip") return StripMethod(self, args, true, false);
  if (name == "rstrip") return StripMethod(self, args, false, true);
  if (name == "startswith") return AffixMethod(self, args, true);
  if (name == "endswith") return AffixMethod(self, args, false);
  if (name == "split") return SplitMethod(self, args, false);
  if (name == "rsplit") return SplitMethod(self, args, true);
  if (name == "splitlines") return SplitLines(self, args);
  if (name == "upper") return CaseMethod(self, args, ToUpper);
  if (name == "lower") return CaseMethod(self, args, ToLower);
  if (name == "title") return CaseMethod(self, args, TitleCase);
  if (name == "capitalize") return CaseMethod(self, args, Capitalize);
  if (name == "replace") return ReplaceMethod(self, args);
  if (name == "join") return JoinMethod(self, args);
  if (name == "find") return FindMethod(self, args, false);
  if (name == "rfind") return FindMethod(self, args, true);
  if (name == "count") return CountMethod(self, args);
  if (name == "format") return FormatMethod(self, args);
  if (name == "removeprefix") return AffixRemoval(self, args, true);
  if (name == "removesuffix") return AffixRemoval(self, args, false);
  if (name == "isdigit") return ClassMethod(self, args, ::isdigit);
  if (name == "isalpha") return ClassMethod(self, args, ::isalpha);
  if (name == "isalnum") return ClassMethod(self, args, ::isalnum);
  if (name == "isspace") return ClassMethod(self, args, ::isspace);
  if (name == "isupper") return ClassMethod(self, args, ::isupper);
  if (name == "islower") return ClassMethod(self, args, ::islower);
  return absl::InternalError("unknown str method");
}

absl::StatusOr<Value> DictMethod(std::string_view name, const Value& self, CallArgs& args) {
  const ValueDict& dict = self.dict_value();
  if (name == "get") {
    KVD_JINJA_BIND_ARGS("get", "key", "default");
    if (!bound[0].has_value()) return absl::InvalidArgumentError("get() takes 1 or 2 arguments");
    const Value* found = dict.Find(*bound[0]);
    if (found != nullptr) return *found;
    return bound[1].has_value() ? *bound[1] : Value::None();
  }
  KVD_JINJA_BIND_ARGS(std::string(name));
  ValueList out;
  for (const auto& [key, value] : dict.entries()) {
    if (name == "items") {
      out.push_back(Value::Tuple({key, value}));
    } else {
      out.push_back(name == "keys" ? key : value);
    }
  }
  return Value::List(std::move(out));
}

absl::StatusOr<Value> ListMethod(std::string_view name, const Value& self, CallArgs& args) {
  if (name == "count") return CountMethod(self, args);
  KVD_JINJA_BIND_ARGS("index", "x");
  if (!bound[0].has_value()) return absl::InvalidArgumentError("index() takes 1 argument");
  const ValueList& items = self.list_value();
  for (size_t i = 0; i < items.size(); ++i) {
    if (Equals(items[i], *bound[0])) return Value::Int(static_cast<int64_t>(i));
  }
  return absl::InvalidArgumentError(bound[0]->Repr() + " is not in list");
}

bool IsStringMethod(std::string_view name) {
  static constexpr std::string_view kNames[] = {
      "strip",      "lstrip",  "rstrip",  "startswith", "endswith",     "split",        "rsplit",
      "splitlines", "upper",   "lower",   "title",      "capitalize",   "replace",      "join",
      "find",       "rfind",   "count",   "format",     "removeprefix", "removesuffix", "isdigit",
      "isalpha",    "isalnum", "isspace", "isupper",    "islower"};
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

}  // namespace

std::optional<Value> BindMethod(const Value& self, std::string_view name) {
  absl::StatusOr<Value> (*dispatch)(std::string_view, const Value&, CallArgs&) = nullptr;
  if (self.is_string() && IsStringMethod(name)) {
    dispatch = StringMethod;
  } else if (self.is_dict() &&
             (name == "items" || name == "keys" || name == "values" || name == "get")) {
    dispatch = DictMethod;
  } else if (self.is_list() && (name == "index" || name == "count")) {
    dispatch = ListMethod;
  }
  if (dispatch == nullptr) return std::nullopt;
  std::string method(name);
  return Value::Function(
      method, [self, method, dispatch](CallArgs& args) { return dispatch(method, self, args); });
}

}  // namespace kvd::text::internal::jinja
