#include "server/openai/tools_json.h"

#include <set>
#include <string>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "server/http/error_response.h"
#include "server/openai/openai_json.h"
#include "text/bounded_json.h"

namespace kvd::server {
namespace {

using json = nlohmann::json;
using structured::JsonValue;

// Deepest nesting of a parameters schema, as for response_format's.
constexpr int kMaxToolsJsonDepth = 64 + 3;

bool IsFunctionName(const std::string& name) {
  return !name.empty() && name.size() <= 64 && absl::c_all_of(name, [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

absl::StatusOr<ToolDefinition> ReadTool(const JsonValue& entry, size_t index) {
  const std::string param = absl::StrCat("tools[", index, "]");
  const std::string shape =
      absl::StrCat("'", param,
                   "' must be {\"type\": \"function\", \"function\": {\"name\", \"description\", "
                   "\"parameters\", \"strict\"}}");
  if (!entry.is_object() || !entry.contains("type") || entry["type"] != "function" ||
      !entry.contains("function") || !entry["function"].is_object()) {
    return InvalidParam(param, shape);
  }
  for (const auto& [key, value] : entry.items()) {
    if (key != "type" && key != "function") return InvalidParam(param, shape);
  }
  const JsonValue& function = entry["function"];
  static const std::set<std::string> kFunctionKeys = {"name", "description", "parameters",
                                                      "strict"};
  for (const auto& [key, value] : function.items()) {
    if (kFunctionKeys.count(key) == 0) {
      return InvalidParam(param,
                          absl::StrCat("unsupported key '", key, "' in '", param, ".function'"));
    }
  }
  ToolDefinition tool;
  if (!function.contains("name") || !function["name"].is_string() ||
      !IsFunctionName(function["name"].get<std::string>())) {
    return InvalidParam(param, absl::StrCat("'", param,
                                            ".function.name' must be 1 to 64 letters, digits, "
                                            "underscores or dashes"));
  }
  tool.name = function["name"].get<std::string>();
  if (function.contains("description") && !function["description"].is_string() &&
      !function["description"].is_null()) {
    return InvalidParam(param, absl::StrCat("'", param, ".function.description' must be a string"));
  }
  if (function.contains("strict") && !function["strict"].is_boolean() &&
      !function["strict"].is_null()) {
    return InvalidParam(param, absl::StrCat("'", param, ".function.strict' must be a boolean"));
  }
  if (function.contains("parameters") && !function["parameters"].is_null()) {
    if (!function["parameters"].is_object()) {
      return InvalidParam(
          param, absl::StrCat("'", param, ".function.parameters' must be a JSON Schema object"));
    }
    tool.parameters = function["parameters"];
  }
  tool.entry = entry;
  return tool;
}

absl::StatusOr<ToolChoice> ReadToolChoice(const JsonValue& value) {
  const std::string shape =
      "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
      "\"function\": {\"name\": ...}}";
  if (value.is_string()) {
    const std::string name = value.get<std::string>();
    if (name == "none") return ToolChoice{ToolChoice::Kind::kNone, ""};
    if (name == "auto") return ToolChoice{ToolChoice::Kind::kAuto, ""};
    if (name == "required") return ToolChoice{ToolChoice::Kind::kRequired, ""};
    return InvalidParam("tool_choice", shape);
  }
  if (!value.is_object() || !StringFieldIs(value, "type", "function") ||
      !value.contains("function") || !value["function"].is_object() ||
      !value["function"].contains("name") || !value["function"]["name"].is_string() ||
      value.size() != 2 || value["function"].size() != 1) {
    return InvalidParam("tool_choice", shape);
  }
  return ToolChoice{ToolChoice::Kind::kFunction, value["function"]["name"].get<std::string>()};
}

}  // namespace

absl::Status ReadToolsJson(const JsonValue& body, CompletionRequest& request) {
  const auto given = [&](std::string_view key) -> const JsonValue* {
    const auto it = body.find(std::string(key));
    return it == body.end() || it->is_null() ? nullptr : &*it;
  };
  if (const JsonValue* parallel = given("parallel_tool_calls")) {
    if (!parallel->is_boolean()) {
      return InvalidParam("parallel_tool_calls", "'parallel_tool_calls' must be a boolean");
    }
    request.parallel_tool_calls = parallel->get<bool>();
  }
  if (const JsonValue* choice = given("tool_choice")) {
    KVD_ASSIGN_OR_RETURN(request.tool_choice, ReadToolChoice(*choice));
  }
  const JsonValue* tools = given("tools");
  if (tools == nullptr) return absl::OkStatus();
  return ReadToolDefinitions(*tools, request);
}

absl::Status ReadToolDefinitions(const JsonValue& tools, CompletionRequest& request) {
  if (!tools.is_array()) return InvalidParam("tools", "'tools' must be an array");
  if (tools.size() > kMaxTools) {
    return InvalidParam("tools", absl::StrCat("'tools' holds at most ", kMaxTools, " functions"));
  }
  std::set<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    KVD_ASSIGN_OR_RETURN(ToolDefinition tool, ReadTool(tools[i], i));
    if (!names.insert(tool.name).second) {
      return InvalidParam("tools", absl::StrCat("two tools are named '", tool.name, "'"));
    }
    request.tools.push_back(std::move(tool));
  }
  return absl::OkStatus();
}

absl::Status CheckMessageToolFields(const JsonValue& message, size_t index) {
  const std::string param = absl::StrCat("messages[", index, "]");
  if (const auto calls = message.find("tool_calls"); calls != message.end() && !calls->is_null()) {
    const std::string shape = absl::StrCat(
        "'", param,
        ".tool_calls' must be an array of {\"id\", \"type\": \"function\", \"function\": "
        "{\"name\", \"arguments\"}} with string values, the arguments a JSON object");
    if (!StringFieldIs(message, "role", "assistant")) {
      return InvalidParam(param + ".tool_calls", "only assistant messages carry 'tool_calls'");
    }
    if (!calls->is_array()) return InvalidParam(param + ".tool_calls", shape);
    for (const JsonValue& call : *calls) {
      if (!call.is_object() || !call.contains("id") || !call["id"].is_string() ||
          !StringFieldIs(call, "type", "function") || !call.contains("function") ||
          !call["function"].is_object() || !call["function"].contains("name") ||
          !call["function"]["name"].is_string() || !call["function"].contains("arguments") ||
          !call["function"]["arguments"].is_string()) {
        return InvalidParam(param + ".tool_calls", shape);
      }
      const std::string& text = call["function"]["arguments"].get_ref<const std::string&>();
      if (text.empty()) continue;  // some clients send "" for a call without arguments
      auto arguments = text::ParseBoundedJson<JsonValue>(text, "the arguments", kMaxToolsJsonDepth);
      if (!arguments.ok() || !arguments->is_object()) {
        return InvalidParam(param + ".tool_calls", shape);
      }
    }
  }
  if (const auto id = message.find("tool_call_id"); id != message.end() && !id->is_null()) {
    if (!id->is_string()) {
      return InvalidParam(
          param + ".tool_call_id",
          absl::StrCat("'", param, ".tool_call_id' must be the string id of a call"));
    }
  }
  return absl::OkStatus();
}

JsonValue TemplateMessages(const json& messages) {
  JsonValue out(messages);
  for (JsonValue& message : out) {
    const auto calls = message.find("tool_calls");
    if (calls == message.end() || !calls->is_array()) continue;
    for (JsonValue& call : *calls) {
      JsonValue& arguments = call["function"]["arguments"];
      // Checked by CheckMessageToolFields.
      const std::string text = arguments.get<std::string>();
      arguments = text.empty() ? JsonValue::object() : JsonValue::parse(text);
    }
  }
  return out;
}

}  // namespace kvd::server
