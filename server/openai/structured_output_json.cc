#include "server/openai/structured_output_json.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_details.h"
#include "base/status_macros.h"
#include "structured/json_rules.h"
#include "text/bounded_json.h"

namespace kvd::server {
namespace {

using structured::JsonValue;
using Kind = structured::ConstraintSpec::Kind;

// A schema given as an object (or boolean), or as a string holding one, as vLLM allows.
absl::StatusOr<std::string> SchemaText(const JsonValue& value, std::string_view param) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() || value.is_boolean()) {
    return value.dump(-1, ' ', false, JsonValue::error_handler_t::replace);
  }
  return InvalidParam(param,
                      absl::StrCat("'", std::string(param), "' must be a JSON Schema object"));
}

absl::Status ReadResponseFormat(const JsonValue& format, CompletionRequest& request) {
  const std::string param = "response_format";
  if (!format.is_object() || !format.contains("type") || !format["type"].is_string()) {
    return InvalidParam(param, "'response_format' must be an object with a string 'type'");
  }
  const std::string type = format["type"].get<std::string>();
  for (const auto& [key, value] : format.items()) {
    if (key != "type" && !(type == "json_schema" && key == "json_schema")) {
      return InvalidParam(param, absl::StrCat("unexpected key 'response_format.", key, "'"));
    }
  }
  if (type == "text") return absl::OkStatus();
  if (type == "json_object") {
    request.structured_output = structured::ConstraintSpec{.kind = Kind::kJsonObject};
    request.structured_output_param = param;
    return absl::OkStatus();
  }
  if (type != "json_schema") {
    return InvalidParam(param,
                        absl::StrCat("'response_format.type' must be one of text, json_object, "
                                     "json_schema; got '",
                                     type, "'"));
  }
  const auto spec = format.find("json_schema");
  if (spec == format.end() || !spec->is_object()) {
    return InvalidParam("response_format.json_schema",
                        "'response_format.json_schema' must be an object with 'name' and 'schema'");
  }
  for (const auto& [key, value] : spec->items()) {
    if (key == "name" || key == "description") {
      if (!value.is_string()) {
        return InvalidParam(
            "response_format.json_schema." + key,
            absl::StrCat("'response_format.json_schema.", key, "' must be a string"));
      }
    } else if (key == "strict") {
      // Every structured output is enforced; `strict` may only say so.
      if (!value.is_boolean() && !value.is_null()) {
        return InvalidParam("response_format.json_schema.strict",
                            "'response_format.json_schema.strict' must be a boolean");
      }
    } else if (key != "schema") {
      return InvalidParam("response_format.json_schema",
                          absl::StrCat("unexpected key 'response_format.json_schema.", key, "'"));
    }
  }
  if (!spec->contains("name")) {
    return InvalidParam("response_format.json_schema.name",
                        "'response_format.json_schema.name' is required");
  }
  // OpenAI's default for a missing schema: any JSON value.
  const JsonValue schema = spec->value("schema", JsonValue(true));
  KVD_ASSIGN_OR_RETURN(std::string text, SchemaText(schema, "response_format.json_schema.schema"));
  request.structured_output =
      structured::ConstraintSpec{.kind = Kind::kJsonSchema, .text = std::move(text)};
  request.structured_output_param = "response_format.json_schema.schema";
  return absl::OkStatus();
}

absl::StatusOr<std::string> ChoicesText(const JsonValue& choices, std::string_view param) {
  if (!choices.is_array() || choices.empty()) {
    return InvalidParam(
        param, absl::StrCat("'", std::string(param), "' must be a non-empty array of strings"));
  }
  for (const JsonValue& choice : choices) {
    if (!choice.is_string() || choice.get_ref<const std::string&>().empty()) {
      return InvalidParam(param, absl::StrCat("'", std::string(param),
                                              "' must be a non-empty array of non-empty strings"));
    }
  }
  return choices.dump(-1, ' ', false, JsonValue::error_handler_t::replace);
}

// vLLM's `structured_outputs.disable_any_whitespace`; kvd's default is true (compact JSON).
constexpr char kWhitespaceKey[] = "disable_any_whitespace";

// Whether `outputs` holds a constraint, not only the whitespace option.
bool HoldsConstraint(const JsonValue& outputs) {
  return !outputs.is_object() || outputs.size() != (outputs.contains(kWhitespaceKey) ? 1u : 0u);
}

absl::Status ReadWhitespaceOption(const JsonValue& body, CompletionRequest& request) {
  const auto outputs = body.find("structured_outputs");
  if (outputs == body.end() || !outputs->is_object()) return absl::OkStatus();
  const auto option = outputs->find(kWhitespaceKey);
  if (option == outputs->end()) return absl::OkStatus();
  const std::string param = absl::StrCat("structured_outputs.", kWhitespaceKey);
  if (!option->is_boolean()) return InvalidParam(param, "'" + param + "' must be a boolean");
  request.json_whitespace =
      option->get<bool>() ? structured::JsonWhitespace::kCompact : structured::JsonWhitespace::kAny;
  return absl::OkStatus();
}

absl::Status ReadStructuredOutputs(const JsonValue& outputs, CompletionRequest& request) {
  const size_t options = outputs.is_object() && outputs.contains(kWhitespaceKey) ? 1 : 0;
  if (!outputs.is_object() || outputs.size() != options + 1) {
    return InvalidParam(
        "structured_outputs",
        "'structured_outputs' must be an object with exactly one of JsonValue, regex, "
        "choice, json_object (and optionally disable_any_whitespace)");
  }
  auto entry = outputs.begin();
  if (entry.key() == kWhitespaceKey) ++entry;
  const std::string key = entry.key();
  const JsonValue& value = entry.value();
  const std::string param = "structured_outputs." + key;
  if (key == "json") {
    KVD_ASSIGN_OR_RETURN(std::string text, SchemaText(value, param));
    request.structured_output = structured::ConstraintSpec{Kind::kJsonSchema, std::move(text)};
  } else if (key == "regex") {
    if (!value.is_string()) return InvalidParam(param, "'" + param + "' must be a string");
    request.structured_output = structured::ConstraintSpec{Kind::kRegex, value.get<std::string>()};
  } else if (key == "choice") {
    KVD_ASSIGN_OR_RETURN(std::string text, ChoicesText(value, param));
    request.structured_output = structured::ConstraintSpec{Kind::kChoice, std::move(text)};
  } else if (key == "json_object") {
    if (value != true) return InvalidParam(param, "'" + param + "' must be true");
    request.structured_output = structured::ConstraintSpec{.kind = Kind::kJsonObject};
  } else {
    return InvalidParam(param, absl::StrCat("'", param,
                                            "' is not supported (supported: JsonValue, regex, "
                                            "choice, json_object)"));
  }
  request.structured_output_param = param;
  return absl::OkStatus();
}

}  // namespace

absl::Status ReadStructuredOutputJson(const JsonValue& body, CompletionRequest& request) {
  KVD_RETURN_IF_ERROR(ReadWhitespaceOption(body, request));
  std::vector<std::string> given;
  for (std::string_view key : kStructuredOutputKeys) {
    const auto it = body.find(std::string(key));
    if (it == body.end() || it->is_null()) continue;
    if (key == "response_format" && it->is_object() && it->value("type", JsonValue()) == "text") {
      continue;  // the default: free text
    }
    if (key == "structured_outputs" && !HoldsConstraint(*it)) continue;
    given.emplace_back(key);
  }
  if (given.empty()) return ReadResponseFormat(JsonValue{{"type", "text"}}, request);
  if (given.size() > 1) {
    return InvalidParam(given[1], absl::StrCat("'", given[0], "' and '", given[1],
                                               "' both constrain the output; send one"));
  }
  const std::string& key = given[0];
  const JsonValue& value = body[key];
  if (key == "response_format") return ReadResponseFormat(value, request);
  if (key == "structured_outputs") return ReadStructuredOutputs(value, request);
  if (key == "guided_grammar") {
    return InvalidParam(key,
                        "'guided_grammar' (grammar constraints) is not supported; use a JSON "
                        "Schema or a regex");
  }
  if (key == "guided_json") {
    KVD_ASSIGN_OR_RETURN(std::string text, SchemaText(value, key));
    request.structured_output = structured::ConstraintSpec{Kind::kJsonSchema, std::move(text)};
  } else if (key == "guided_regex") {
    if (!value.is_string()) return InvalidParam(key, "'guided_regex' must be a string");
    request.structured_output = structured::ConstraintSpec{Kind::kRegex, value.get<std::string>()};
  } else {
    KVD_ASSIGN_OR_RETURN(std::string text, ChoicesText(value, key));
    request.structured_output = structured::ConstraintSpec{Kind::kChoice, std::move(text)};
  }
  request.structured_output_param = key;
  return absl::OkStatus();
}

}  // namespace kvd::server
