// Text and number filters, and the table of every filter by name.
#include "text/internal/jinja/filters.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "text/internal/jinja/call_args.h"
#include "text/internal/jinja/json_convert.h"
#include "text/internal/jinja/operators.h"
#include "text/internal/jinja/sequence_filters.h"
#include "text/internal/jinja/text.h"

namespace kvd::text::internal::jinja {

namespace {

absl::StatusOr<Value> FilterTrim(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("trim", "chars");
  KVD_ASSIGN_OR_RETURN(std::optional<std::string> chars, OptionalStringArg(bound[0], "trim chars"));
  return Value::String(Strip(input.Str(), chars, true, true));
}

// HF's tojson: json.dumps(x, ensure_ascii=False, indent=indent, separators=separators,
// sort_keys=sort_keys), not jinja2's HTML-escaping version.
absl::StatusOr<Value> FilterToJson(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("tojson", "ensure_ascii", "indent", "separators", "sort_keys");
  if (BoolArg(bound[0], false)) return absl::InvalidArgumentError("ensure_ascii is not supported");
  JsonDumpOptions options;
  if (bound[1].has_value() && !bound[1]->is_none()) {
    if (bound[1]->is_string()) {
      options.indent = bound[1]->string_value();
    } else {
      KVD_ASSIGN_OR_RETURN(int64_t width, IntArg(bound[1], "tojson indent", 0));
      options.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(width, 0, 64)), ' ');
    }
  }
  if (bound[2].has_value() && !bound[2]->is_none()) {
    const Value& separators = *bound[2];
    if (!separators.is_list() || separators.list_value().size() != 2 ||
        !separators.list_value()[0].is_string() || !separators.list_value()[1].is_string()) {
      return absl::InvalidArgumentError("tojson separators must be a pair of strings");
    }
    options.item_separator = separators.list_value()[0].string_value();
    options.key_separator = separators.list_value()[1].string_value();
  }
  options.sort_keys = BoolArg(bound[3], false);
  KVD_ASSIGN_OR_RETURN(std::string json, DumpJson(input, options));
  return Value::String(std::move(json));
}

absl::StatusOr<Value> TextFilter(const Value& input, CallArgs& args,
                                 std::string (*change)(std::string_view)) {
  KVD_JINJA_BIND_ARGS("filter");
  return Value::String(change(input.Str()));
}
absl::StatusOr<Value> FilterUpper(const Value& input, CallArgs& args) {
  return TextFilter(input, args, ToUpper);
}
absl::StatusOr<Value> FilterLower(const Value& input, CallArgs& args) {
  return TextFilter(input, args, ToLower);
}
absl::StatusOr<Value> FilterCapitalize(const Value& input, CallArgs& args) {
  return TextFilter(input, args, Capitalize);
}
absl::StatusOr<Value> FilterTitle(const Value& input, CallArgs& args) {
  return TextFilter(input, args, TitleFilter);
}

absl::StatusOr<Value> FilterDefault(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("default", "default_value", "boolean");
  const bool use_default = input.is_undefined() || (BoolArg(bound[1], false) && !input.Truthy());
  if (!use_default) return input;
  return bound[0].has_value() ? *bound[0] : Value::String("");
}

absl::StatusOr<Value> FilterString(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("string");
  return Value::String(input.Str());
}

// Python's int(text, base): optional sign and surrounding whitespace, digits with `_`
// separators (and, in base 16, an optional 0x prefix).
std::optional<int64_t> ParseInt(const std::string& text, int base) {
  const std::string trimmed = Strip(text, std::nullopt, true, true);
  std::string digits;
  for (char c : trimmed) {
    if (c != '_') digits += c;
  }
  if (digits.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(digits.c_str(), &end, base);
  if (*end != '\0' || errno != 0 || IsSpace(digits[0])) return std::nullopt;
  return value;
}

// Python's float(text). strtod also reads hexadecimal ("0x1A"), which Python refuses.
std::optional<double> ParseFloat(const std::string& text) {
  const std::string trimmed = Strip(text, std::nullopt, true, true);
  if (trimmed.empty()) return std::nullopt;
  const size_t digits = trimmed[0] == '+' || trimmed[0] == '-' ? 1 : 0;
  if (trimmed.size() > digits + 1 && trimmed[digits] == '0' &&
      (trimmed[digits + 1] == 'x' || trimmed[digits + 1] == 'X')) {
    return std::nullopt;
  }
  char* end = nullptr;
  const double value = std::strtod(trimmed.c_str(), &end);
  if (*end != '\0') return std::nullopt;
  return value;
}

absl::StatusOr<Value> FilterInt(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("int", "default", "base");
  const Value fallback = bound[0].has_value() ? *bound[0] : Value::Int(0);
  KVD_ASSIGN_OR_RETURN(int64_t base, IntArg(bound[1], "int base", 10));
  if (base < 2 || base > 36) return absl::InvalidArgumentError("int() base must be >= 2 and <= 36");
  if (input.is_int()) return input;
  if (input.is_bool()) return Value::Int(input.bool_value() ? 1 : 0);
  if (input.is_float()) {
    const double f = std::trunc(input.float_value());
    if (!std::isfinite(f) || std::fabs(f) >= 9.2e18) return fallback;
    return Value::Int(static_cast<int64_t>(f));
  }
  if (input.is_string()) {
    if (std::optional<int64_t> i = ParseInt(input.string_value(), static_cast<int>(base));
        i.has_value()) {
      return Value::Int(*i);
    }
    // jinja2 falls back to int(float(text)).
    std::optional<double> f = ParseFloat(input.string_value());
    if (f.has_value() && std::isfinite(*f) && std::fabs(*f) < 9.2e18) {
      return Value::Int(static_cast<int64_t>(std::trunc(*f)));
    }
  }
  return fallback;
}

absl::StatusOr<Value> FilterFloat(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("float", "default");
  const Value fallback = bound[0].has_value() ? *bound[0] : Value::Float(0.0);
  if (input.is_number()) return Value::Float(input.AsDouble());
  if (input.is_string()) {
    if (std::optional<double> f = ParseFloat(input.string_value()); f.has_value()) {
      return Value::Float(*f);
    }
  }
  return fallback;
}

absl::StatusOr<Value> FilterAbs(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("abs");
  if (input.is_float()) return Value::Float(std::fabs(input.float_value()));
  if (input.is_int() || input.is_bool()) {
    const int64_t i = input.is_bool() ? input.bool_value() : input.int_value();
    if (i == INT64_MIN) return absl::InvalidArgumentError("integer overflow");
    return Value::Int(i < 0 ? -i : i);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("bad operand type for abs(): '", input.TypeName(), "'"));
}

absl::StatusOr<Value> FilterRound(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("round", "precision", "method");
  KVD_ASSIGN_OR_RETURN(int64_t precision, IntArg(bound[0], "round precision", 0));
  KVD_ASSIGN_OR_RETURN(std::string method, StringArg(bound[1], "round method", "common"));
  if (!input.is_number()) {
    return absl::InvalidArgumentError("round filter expects a number, not " + input.TypeName());
  }
  precision = std::clamp<int64_t>(precision, -300, 300);
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double scaled = input.AsDouble() * scale;
  if (method == "common") {
    // Python's round(): half to even; ints stay ints.
    if (!input.is_float()) {
      const int64_t i = input.is_bool() ? input.bool_value() : input.int_value();
      if (precision >= 0) return Value::Int(i);
      const double rounded = std::nearbyint(scaled) / scale;
      if (std::fabs(rounded) >= 9.2e18) return absl::InvalidArgumentError("integer overflow");
      return Value::Int(static_cast<int64_t>(rounded));
    }
    if (precision >= 0 && std::isfinite(input.float_value())) {
      // Python rounds the exact binary value (round(2.675, 2) is 2.67), as printf does.
      const int digits = static_cast<int>(precision);
      std::string text(std::snprintf(nullptr, 0, "%.*f", digits, input.float_value()), '\0');
      std::snprintf(text.data(), text.size() + 1, "%.*f", digits, input.float_value());
      return Value::Float(std::strtod(text.c_str(), nullptr));
    }
    return Value::Float(std::nearbyint(scaled) / scale);
  }
  if (method == "ceil") return Value::Float(std::ceil(scaled) / scale);
  if (method == "floor") return Value::Float(std::floor(scaled) / scale);
  return absl::InvalidArgumentError("method must be common, ceil or floor");
}

absl::StatusOr<Value> FilterReplace(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("replace", "old", "new", "count");
  KVD_ASSIGN_OR_RETURN(std::string old, StringArg(bound[0], "replace old", ""));
  KVD_ASSIGN_OR_RETURN(std::string replacement, StringArg(bound[1], "replace new", ""));
  int64_t count = -1;
  if (bound[2].has_value() && !bound[2]->is_none()) {
    KVD_ASSIGN_OR_RETURN(count, IntArg(bound[2], "replace count", -1));
  }
  std::string out = Replace(input.Str(), old, replacement, count);
  if (out.size() > kMaxStringBytes) return absl::InvalidArgumentError("replace result too long");
  return Value::String(std::move(out));
}

absl::StatusOr<Value> FilterIndent(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("indent", "width", "first", "blank");
  std::string indentation;
  if (bound[0].has_value() && bound[0]->is_string()) {
    indentation = bound[0]->string_value();
  } else {
    KVD_ASSIGN_OR_RETURN(int64_t width, IntArg(bound[0], "indent width", 4));
    indentation.assign(static_cast<size_t>(std::clamp<int64_t>(width, 0, 1024)), ' ');
  }
  // jinja2 appends a newline and splits into lines, so a trailing newline is dropped.
  std::vector<std::string> lines;
  const std::string text = input.Str() + "\n";
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n' && text[i] != '\r') continue;
    lines.push_back(text.substr(start, i - start));
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
    start = i + 1;
  }
  const bool blank = BoolArg(bound[2], false);
  std::string out = BoolArg(bound[1], false) ? indentation : "";
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      out += '\n';
      if (blank || !lines[i].empty()) out += indentation;
    }
    out += lines[i];
    if (out.size() > kMaxStringBytes) return absl::InvalidArgumentError("indent result too long");
  }
  return Value::String(std::move(out));
}

absl::StatusOr<Value> FilterSafe(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("safe");
  return input;
}

absl::StatusOr<Value> FilterEscape(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("escape");
  std::string out;
  for (char c : input.Str()) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return Value::String(std::move(out));
}

absl::StatusOr<Value> FilterWordCount(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("wordcount");
  // Words are runs of \w: letters, digits, '_' and (approximately) any non-ASCII character.
  int64_t words = 0;
  bool in_word = false;
  for (char c : input.Str()) {
    const auto u = static_cast<unsigned char>(c);
    const bool word_char = std::isalnum(u) != 0 || c == '_' || u >= 0x80;
    if (word_char && !in_word) ++words;
    in_word = word_char;
  }
  return Value::Int(words);
}

absl::StatusOr<Value> FilterAttr(const Value& input, CallArgs& args) {
  KVD_JINJA_BIND_ARGS("attr", "name");
  KVD_ASSIGN_OR_RETURN(std::string name, StringArg(bound[0], "attr name", ""));
  return GetAttribute(input, name);
}

absl::StatusOr<Value> FilterFormat(const Value& input, CallArgs& args) {
  if (!input.is_string()) return absl::InvalidArgumentError("format expects a string");
  if (!args.keyword.empty()) return absl::InvalidArgumentError("format takes no keywords");
  return FormatPercent(input.string_value(), Value::Tuple(args.positional));
}

}  // namespace

FilterFunction FindFilter(std::string_view name) {
  static const auto* const kFilters = new absl::flat_hash_map<std::string, FilterFunction>{
      {"abs", FilterAbs},
      {"attr", FilterAttr},
      {"capitalize", FilterCapitalize},
      {"count", FilterLength},
      {"d", FilterDefault},
      {"default", FilterDefault},
      {"dictsort", FilterDictSort},
      {"e", FilterEscape},
      {"escape", FilterEscape},
      {"first", FilterFirst},
      {"float", FilterFloat},
      {"format", FilterFormat},
      {"indent", FilterIndent},
      {"int", FilterInt},
      {"items", FilterItems},
      {"join", FilterJoin},
      {"last", FilterLast},
      {"length", FilterLength},
      {"list", FilterList},
      {"lower", FilterLower},
      {"map", FilterMap},
      {"max", FilterMax},
      {"min", FilterMin},
      {"reject", FilterReject},
      {"rejectattr", FilterRejectAttr},
      {"replace", FilterReplace},
      {"reverse", FilterReverse},
      {"round", FilterRound},
      {"safe", FilterSafe},
      {"select", FilterSelect},
      {"selectattr", FilterSelectAttr},
      {"sort", FilterSort},
      {"string", FilterString},
      {"sum", FilterSum},
      {"title", FilterTitle},
      {"tojson", FilterToJson},
      {"trim", FilterTrim},
      {"unique", FilterUnique},
      {"upper", FilterUpper},
      {"wordcount", FilterWordCount},
  };
  const auto it = kFilters->find(std::string(name));
  return it == kFilters->end() ? nullptr : it->second;
}

}  // namespace kvd::text::internal::jinja
