// JSON in and out of template values, matching Python's json module byte for byte.
#include "text/internal/jinja/json_convert.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"

namespace kvd::text::internal::jinja {

namespace {

template <typename Json>
absl::StatusOr<Value> Convert(const Json& json, int depth) {
  if (depth > kMaxValueDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("JSON nested deeper than ", kMaxValueDepth, " levels"));
  }
  switch (json.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
      return Value::None();
    case nlohmann::json::value_t::boolean:
      return Value::Bool(json.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value::Int(json.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      const auto u = json.template get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value::Int(static_cast<int64_t>(u));
      return Value::Float(static_cast<double>(u));
    }
    case nlohmann::json::value_t::number_float:
      return Value::Float(json.template get<double>());
    case nlohmann::json::value_t::string:
      return Value::String(json.template get<std::string>());
    case nlohmann::json::value_t::array: {
      ValueList items;
      items.reserve(json.size());
      for (const auto& element : json) {
        KVD_ASSIGN_OR_RETURN(Value item, Convert(element, depth + 1));
        items.push_back(std::move(item));
      }
      return Value::List(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      ValueDict dict;
      for (auto it = json.begin(); it != json.end(); ++it) {
        KVD_ASSIGN_OR_RETURN(Value item, Convert(it.value(), depth + 1));
        dict.Append(Value::String(it.key()), std::move(item));
      }
      return Value::Dict(std::move(dict));
    }
    case nlohmann::json::value_t::binary:
      break;
  }
  return absl::InvalidArgumentError("binary JSON values are not supported");
}

void AppendJsonString(std::string_view text, std::string* out) {
  *out += '"';
  for (char c : text) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '\b':
        *out += "\\b";
        break;
      case '\f':
        *out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(out, "\\u%04x", static_cast<unsigned char>(c));
        } else {
          *out += c;
        }
    }
  }
  *out += '"';
}

std::string JsonFloat(double f) {
  if (std::isnan(f)) return "NaN";
  if (std::isinf(f)) return f > 0 ? "Infinity" : "-Infinity";
  return FormatFloat(f);
}

absl::StatusOr<std::string> JsonKey(const Value& key) {
  switch (key.kind()) {
    case Value::Kind::kString:
      return key.string_value();
    case Value::Kind::kInt:
      return absl::StrCat(key.int_value());
    case Value::Kind::kFloat:
      return JsonFloat(key.float_value());
    case Value::Kind::kBool:
      return std::string(key.bool_value() ? "true" : "false");
    case Value::Kind::kNone:
      return std::string("null");
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("keys must be str, int, float, bool or None, not ", key.TypeName()));
  }
}

class JsonWriter {
 public:
  explicit JsonWriter(const JsonDumpOptions& options) : options_(options) {}

  absl::Status Write(const Value& value, int level) {
    switch (value.kind()) {
      case Value::Kind::kNone:
        out_ += "null";
        return absl::OkStatus();
      case Value::Kind::kBool:
        out_ += value.bool_value() ? "true" : "false";
        return absl::OkStatus();
      case Value::Kind::kInt:
        absl::StrAppend(&out_, value.int_value());
        return absl::OkStatus();
      case Value::Kind::kFloat:
        out_ += JsonFloat(value.float_value());
        return absl::OkStatus();
      case Value::Kind::kString:
        AppendJsonString(value.string_value(), &out_);
        return absl::OkStatus();
      case Value::Kind::kList:
        return WriteList(value.list_value(), level);
      case Value::Kind::kDict:
        return WriteDict(value.dict_value(), level);
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("Object of type ", value.TypeName(), " is not JSON serializable"));
    }
  }

  std::string Take() { return std::move(out_); }

 private:
  // What goes between elements (and before the first) at nesting `level`.
  void Separator(bool first, int level) {
    if (!first) {
      out_ += options_.item_separator.value_or(options_.indent.has_value() ? "," : ", ");
    }
    NewLine(level);
  }

  void NewLine(int level) {
    if (!options_.indent.has_value()) return;
    out_ += '\n';
    for (int i = 0; i < level; ++i) out_ += *options_.indent;
  }

  absl::Status WriteList(const ValueList& items, int level) {
    if (items.empty()) {
      out_ += "[]";
      return absl::OkStatus();
    }
    out_ += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      Separator(i == 0, level + 1);
      KVD_RETURN_IF_ERROR(Write(items[i], level + 1));
    }
    NewLine(level);
    out_ += ']';
    return absl::OkStatus();
  }

  absl::Status WriteDict(const ValueDict& dict, int level) {
    if (dict.size() == 0) {
      out_ += "{}";
      return absl::OkStatus();
    }
    std::vector<std::pair<std::string, const Value*>> entries;
    for (const auto& [key, value] : dict.entries()) {
      KVD_ASSIGN_OR_RETURN(std::string text, JsonKey(key));
      entries.emplace_back(std::move(text), &value);
    }
    if (options_.sort_keys) {
      std::stable_sort(entries.begin(), entries.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
    }
    out_ += '{';
    for (size_t i = 0; i < entries.size(); ++i) {
      Separator(i == 0, level + 1);
      AppendJsonString(entries[i].first, &out_);
      out_ += options_.key_separator.value_or(": ");
      KVD_RETURN_IF_ERROR(Write(*entries[i].second, level + 1));
    }
    NewLine(level);
    out_ += '}';
    return absl::OkStatus();
  }

  const JsonDumpOptions& options_;
  std::string out_;
};

}  // namespace

absl::StatusOr<Value> FromJson(const nlohmann::ordered_json& json) { return Convert(json, 0); }
absl::StatusOr<Value> FromJson(const nlohmann::json& json) { return Convert(json, 0); }

absl::StatusOr<std::string> DumpJson(const Value& value, const JsonDumpOptions& options) {
  JsonWriter writer(options);
  KVD_RETURN_IF_ERROR(writer.Write(value, 0));
  return writer.Take();
}

}  // namespace kvd::text::internal::jinja
