#include "server/responses/responses_request.h"

#include <cstdint>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_details.h"
#include "base/status_macros.h"
#include "server/openai/completion_request_json.h"
#include "server/openai/tools_json.h"
#include "text/bounded_json.h"

namespace kvd::server::responses {
namespace {

using json = nlohmann::json;
using structured::JsonValue;

// Metadata limits, as OpenAI's.
constexpr size_t kMaxMetadataPairs = 16;
constexpr size_t kMaxMetadataKeyBytes = 64;
constexpr size_t kMaxMetadataValueBytes = 512;

const std::set<std::string>& Keys() {
  static const std::set<std::string> keys = {"model",
                                             "input",
                                             "instructions",
                                             "tools",
                                             "tool_choice",
                                             "parallel_tool_calls",
                                             "text",
                                             "max_output_tokens",
                                             "temperature",
                                             "top_p",
                                             "metadata",
                                             "store",
                                             "previous_response_id",
                                             "stream",
                                             "user",
                                             "truncation",
                                             "reasoning",
                                             "include",
                                             "background",
                                             "service_tier",
                                             "prompt_cache_key",
                                             "safety_identifier",
                                             "documents",
                                             "keepkv",
                                             "seed",
                                             "top_k"};
  return keys;
}

std::string Quoted(const std::string& param) { return absl::StrCat("'", param, "'"); }

absl::Status Mistyped(const std::string& param, const std::string& type) {
  return InvalidParam(param, absl::StrCat(Quoted(param), " must be ", type));
}

absl::Status Unsupported(const std::string& param, const std::string& what) {
  return InvalidParam(param, absl::StrCat(Quoted(param), ": ", what, " is not supported"));
}

int64_t IntegerOf(const JsonValue& value) {
  if (!value.is_number_unsigned()) return value.get<int64_t>();
  return value.get<uint64_t>() > uint64_t{INT64_MAX} ? INT64_MAX
                                                     : static_cast<int64_t>(value.get<uint64_t>());
}

const JsonValue* Given(const JsonValue& object, const std::string& key) {
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

absl::Status CheckKeys(const JsonValue& object, const std::string& param,
                       std::initializer_list<const char*> allowed) {
  for (const auto& [key, value] : object.items()) {
    bool known = false;
    for (const char* name : allowed) known = known || key == name;
    if (!known) {
      return InvalidParam(param, absl::StrCat("unsupported key '", key, "' in ", Quoted(param)));
    }
  }
  return absl::OkStatus();
}

// A message's content: a string, or parts of `part_type` (input_text, or output_text for the
// assistant's) joined.
absl::StatusOr<std::string> ContentText(const JsonValue& content, const std::string& param,
                                        const std::string& part_type) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return Mistyped(param, "a string or an array of content parts");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string part_param = absl::StrCat(param, "[", i, "]");
    const JsonValue& part = content[i];
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      return Mistyped(part_param, "an object with a 'type'");
    }
    const std::string type = part["type"].get<std::string>();
    if (type != part_type) {
      return Unsupported(part_param, absl::StrCat("a content part of type '", type, "'"));
    }
    KVD_RETURN_IF_ERROR(CheckKeys(part, part_param, {"type", "text", "annotations", "logprobs"}));
    if (!part.contains("text") || !part["text"].is_string()) {
      return Mistyped(part_param + ".text", "a string");
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

// One input item, normalized: {type: message, role, content: text},
// {type: function_call, call_id, name, arguments} or {type: function_call_output, call_id,
// output: text}.
absl::StatusOr<JsonValue> ReadItem(const JsonValue& item, const std::string& param) {
  if (!item.is_object()) return Mistyped(param, "an object");
  std::string type = "message";
  if (const JsonValue* given = Given(item, "type")) {
    if (!given->is_string()) return Mistyped(param + ".type", "a string");
    type = given->get<std::string>();
  }
  if (type == "message") {
    KVD_RETURN_IF_ERROR(CheckKeys(item, param, {"type", "role", "content", "id", "status"}));
    const JsonValue* role = Given(item, "role");
    static const std::set<std::string> kRoles = {"user", "assistant", "system", "developer"};
    if (role == nullptr || !role->is_string() || kRoles.count(role->get<std::string>()) == 0) {
      return InvalidParam(param + ".role", absl::StrCat(Quoted(param + ".role"),
                                                        " must be user, assistant, system or "
                                                        "developer"));
    }
    const std::string role_name = role->get<std::string>();
    const JsonValue* content = Given(item, "content");
    if (content == nullptr) return Mistyped(param + ".content", "a string or content parts");
    KVD_ASSIGN_OR_RETURN(std::string text,
                         ContentText(*content, param + ".content",
                                     role_name == "assistant" ? "output_text" : "input_text"));
    return JsonValue{{"type", "message"}, {"role", role_name}, {"content", std::move(text)}};
  }
  if (type == "function_call") {
    KVD_RETURN_IF_ERROR(
        CheckKeys(item, param, {"type", "call_id", "name", "arguments", "id", "status"}));
    for (const char* key : {"call_id", "name", "arguments"}) {
      const JsonValue* value = Given(item, key);
      if (value == nullptr || !value->is_string()) {
        return Mistyped(absl::StrCat(param, ".", key), "a string");
      }
    }
    const std::string arguments = item["arguments"].get<std::string>();
    if (!arguments.empty()) {
      auto parsed = text::ParseBoundedJson<JsonValue>(arguments, "the arguments");
      if (!parsed.ok() || !parsed->is_object()) {
        return Mistyped(param + ".arguments", "the JSON text of an object");
      }
    }
    return JsonValue{{"type", "function_call"},
                     {"call_id", item["call_id"]},
                     {"name", item["name"]},
                     {"arguments", arguments}};
  }
  if (type == "function_call_output") {
    KVD_RETURN_IF_ERROR(CheckKeys(item, param, {"type", "call_id", "output", "id", "status"}));
    const JsonValue* call_id = Given(item, "call_id");
    if (call_id == nullptr || !call_id->is_string())
      return Mistyped(param + ".call_id", "a string");
    const JsonValue* output = Given(item, "output");
    if (output == nullptr) return Mistyped(param + ".output", "a string or content parts");
    KVD_ASSIGN_OR_RETURN(std::string text, ContentText(*output, param + ".output", "input_text"));
    return JsonValue{
        {"type", "function_call_output"}, {"call_id", *call_id}, {"output", std::move(text)}};
  }
  return Unsupported(param, absl::StrCat("an input item of type '", type, "'"));
}

absl::Status ReadInput(const JsonValue& body, ResponsesRequest& request) {
  const JsonValue* input = Given(body, "input");
  if (input == nullptr) return InvalidParam("input", "'input' is required");
  if (input->is_string()) {
    request.input_items.push_back(
        {{"type", "message"}, {"role", "user"}, {"content", input->get<std::string>()}});
    return absl::OkStatus();
  }
  if (!input->is_array() || input->empty()) {
    return Mistyped("input", "a string or a non-empty array of items");
  }
  KVD_ASSIGN_OR_RETURN(request.input_items, NormalizeItems(*input, "input"));
  return absl::OkStatus();
}

// Function tools as chat's function entries (names and schemas are checked there).
absl::Status ReadTools(const JsonValue& body, ResponsesRequest& request) {
  const JsonValue* tools = Given(body, "tools");
  if (tools == nullptr) return absl::OkStatus();
  if (!tools->is_array()) return Mistyped("tools", "an array");
  JsonValue functions = JsonValue::array();
  for (size_t i = 0; i < tools->size(); ++i) {
    const std::string param = absl::StrCat("tools[", i, "]");
    const JsonValue& tool = (*tools)[i];
    if (!tool.is_object() || !tool.contains("type") || !tool["type"].is_string()) {
      return Mistyped(param, "an object with a 'type'");
    }
    if (tool["type"] != "function") {
      return Unsupported(param,
                         absl::StrCat("the built-in tool '", tool["type"].get<std::string>(), "'"));
    }
    KVD_RETURN_IF_ERROR(
        CheckKeys(tool, param, {"type", "name", "description", "parameters", "strict"}));
    JsonValue function = JsonValue::object();
    for (const char* key : {"name", "description", "parameters", "strict"}) {
      if (tool.contains(key)) function[key] = tool[key];
    }
    functions.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  KVD_RETURN_IF_ERROR(ReadToolDefinitions(functions, request.completion));
  request.tools = *tools;
  return absl::OkStatus();
}

absl::Status ReadToolChoice(const JsonValue& body, ResponsesRequest& request) {
  const JsonValue* choice = Given(body, "tool_choice");
  if (choice == nullptr) return absl::OkStatus();
  using Kind = ToolChoice::Kind;
  const std::string shape =
      "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
      "\"name\": ...}";
  if (choice->is_string()) {
    const std::string mode = choice->get<std::string>();
    if (mode == "none") {
      request.completion.tool_choice = ToolChoice{Kind::kNone, ""};
    } else if (mode == "auto") {
      request.completion.tool_choice = ToolChoice{Kind::kAuto, ""};
    } else if (mode == "required") {
      request.completion.tool_choice = ToolChoice{Kind::kRequired, ""};
    } else {
      return InvalidParam("tool_choice", shape);
    }
  } else if (choice->is_object() && choice->size() == 2 && choice->contains("type") &&
             (*choice)["type"] == "function" && choice->contains("name") &&
             (*choice)["name"].is_string()) {
    request.completion.tool_choice =
        ToolChoice{Kind::kFunction, (*choice)["name"].get<std::string>()};
  } else {
    return InvalidParam("tool_choice", shape);
  }
  request.tool_choice = *choice;
  return absl::OkStatus();
}

// `text.format`: text, json_object, or json_schema {name, schema, description, strict}.
absl::Status ReadTextFormat(const JsonValue& body, ResponsesRequest& request) {
  const JsonValue* text = Given(body, "text");
  if (text == nullptr) return absl::OkStatus();
  if (!text->is_object()) return Mistyped("text", "an object");
  KVD_RETURN_IF_ERROR(CheckKeys(*text, "text", {"format"}));
  const JsonValue* format = Given(*text, "format");
  if (format == nullptr) return absl::OkStatus();
  if (!format->is_object() || !format->contains("type") || !(*format)["type"].is_string()) {
    return Mistyped("text.format", "an object with a 'type'");
  }
  const std::string type = (*format)["type"].get<std::string>();
  using Kind = structured::ConstraintSpec::Kind;
  CompletionRequest& completion = request.completion;
  if (type == "text") {
    KVD_RETURN_IF_ERROR(CheckKeys(*format, "text.format", {"type"}));
  } else if (type == "json_object") {
    KVD_RETURN_IF_ERROR(CheckKeys(*format, "text.format", {"type"}));
    completion.structured_output = structured::ConstraintSpec{.kind = Kind::kJsonObject};
    completion.structured_output_param = "text.format";
  } else if (type == "json_schema") {
    KVD_RETURN_IF_ERROR(
        CheckKeys(*format, "text.format", {"type", "name", "schema", "description", "strict"}));
    const JsonValue* name = Given(*format, "name");
    if (name == nullptr || !name->is_string()) return Mistyped("text.format.name", "a string");
    if (const JsonValue* description = Given(*format, "description");
        description != nullptr && !description->is_string()) {
      return Mistyped("text.format.description", "a string");
    }
    if (const JsonValue* strict = Given(*format, "strict");
        strict != nullptr && !strict->is_boolean()) {
      return Mistyped("text.format.strict", "a boolean");
    }
    const JsonValue* schema = Given(*format, "schema");
    if (schema == nullptr || !(schema->is_object() || schema->is_boolean())) {
      return Mistyped("text.format.schema", "a JSON Schema object");
    }
    completion.structured_output = structured::ConstraintSpec{
        .kind = Kind::kJsonSchema,
        .text = schema->dump(-1, ' ', false, json::error_handler_t::replace)};
    completion.structured_output_param = "text.format.schema";
  } else {
    return InvalidParam("text.format.type",
                        "'text.format.type' must be text, json_object or "
                        "json_schema");
  }
  request.text_format = *format;
  return absl::OkStatus();
}

absl::Status ReadMetadata(const JsonValue& body, ResponsesRequest& request) {
  const JsonValue* metadata = Given(body, "metadata");
  if (metadata == nullptr) return absl::OkStatus();
  const std::string rule = absl::StrCat(
      "'metadata' must be an object of at most ", kMaxMetadataPairs, " string values (keys up to ",
      kMaxMetadataKeyBytes, " bytes, values up to ", kMaxMetadataValueBytes, ")");
  if (!metadata->is_object() || metadata->size() > kMaxMetadataPairs) {
    return InvalidParam("metadata", rule);
  }
  for (const auto& [key, value] : metadata->items()) {
    if (key.size() > kMaxMetadataKeyBytes || !value.is_string() ||
        value.get_ref<const std::string&>().size() > kMaxMetadataValueBytes) {
      return InvalidParam("metadata", rule);
    }
  }
  request.metadata = *metadata;
  return absl::OkStatus();
}

template <typename T>
absl::Status ReadNumber(const JsonValue& body, const char* key, std::optional<T>& out) {
  const JsonValue* value = Given(body, key);
  if (value == nullptr) return absl::OkStatus();
  if constexpr (std::is_same_v<T, double>) {
    if (!value->is_number()) return Mistyped(key, "a number");
    out = value->get<double>();
  } else {
    if (!value->is_number_integer()) return Mistyped(key, "an integer");
    out = IntegerOf(*value);
  }
  return absl::OkStatus();
}

absl::Status ReadFlags(const JsonValue& body, ResponsesRequest& request) {
  CompletionRequest& completion = request.completion;
  for (const auto& [key, out] :
       {std::pair{"store", &request.store}, std::pair{"stream", &completion.stream},
        std::pair{"parallel_tool_calls", &completion.parallel_tool_calls}}) {
    if (const JsonValue* value = Given(body, key)) {
      if (!value->is_boolean()) return Mistyped(key, "a boolean");
      *out = value->get<bool>();
    }
  }
  for (const auto& [key, out] :
       {std::pair{"model", &completion.model}, std::pair{"user", &completion.user}}) {
    if (const JsonValue* value = Given(body, key)) {
      if (!value->is_string()) return Mistyped(key, "a string");
      *out = value->get<std::string>();
    }
  }
  if (const JsonValue* instructions = Given(body, "instructions")) {
    if (!instructions->is_string()) return Mistyped("instructions", "a string");
    request.instructions = instructions->get<std::string>();
  }
  if (const JsonValue* previous = Given(body, "previous_response_id")) {
    if (!previous->is_string()) return Mistyped("previous_response_id", "a string");
    request.previous_response_id = previous->get<std::string>();
  }
  return absl::OkStatus();
}

// Parts of the API kvd does not do, accepted only at their neutral values; hints it needs not.
absl::Status RefuseUnsupported(const JsonValue& body) {
  if (const JsonValue* truncation = Given(body, "truncation");
      truncation && *truncation != "disabled") {
    return Unsupported("truncation", "truncation other than \"disabled\"");
  }
  if (const JsonValue* reasoning = Given(body, "reasoning");
      reasoning && !(reasoning->is_object() && reasoning->empty())) {
    return Unsupported("reasoning", "reasoning");
  }
  if (const JsonValue* include = Given(body, "include");
      include && !(include->is_array() && include->empty())) {
    return Unsupported("include", "including extra output data");
  }
  if (const JsonValue* background = Given(body, "background"); background && *background != false) {
    return Unsupported("background", "background mode");
  }
  if (const JsonValue* tier = Given(body, "service_tier");
      tier && *tier != "auto" && *tier != "default") {
    return InvalidParam("service_tier", "'service_tier' must be auto or default");
  }
  for (const char* key : {"prompt_cache_key", "safety_identifier"}) {
    if (const JsonValue* value = Given(body, key); value && !value->is_string()) {
      return Mistyped(key, "a string");
    }
  }
  return absl::OkStatus();
}

absl::Status ReadExtensions(const JsonValue& body, ResponsesRequest& request) {
  CompletionRequest& completion = request.completion;
  if (const JsonValue* documents = Given(body, "documents")) {
    if (!documents->is_array()) return Mistyped("documents", "an array of document ids");
    for (const JsonValue& id : *documents) {
      if (!id.is_string()) return Mistyped("documents", "an array of document ids");
      completion.documents.push_back(id.get<std::string>());
    }
  }
  KVD_ASSIGN_OR_RETURN(completion.keepkv, ReadKeepKvJson(body));
  KVD_RETURN_IF_ERROR(ReadNumber(body, "seed", completion.seed));
  return ReadSamplingJson(body, "top_k", completion);
}

}  // namespace

absl::StatusOr<ResponsesRequest> ReadResponsesRequest(std::string_view text) {
  KVD_ASSIGN_OR_RETURN(const JsonValue body,
                       text::ParseBoundedJson<JsonValue>(text, "the request body"));
  if (!body.is_object())
    return absl::InvalidArgumentError("the request body must be a JSON object");
  for (const auto& [key, value] : body.items()) {
    if (Keys().count(key) == 0) {
      return InvalidParam(key, absl::StrCat("unsupported parameter '", key, "'"));
    }
  }
  ResponsesRequest request;
  request.completion.kind = ApiKind::kChat;
  KVD_RETURN_IF_ERROR(RefuseUnsupported(body));
  KVD_RETURN_IF_ERROR(ReadFlags(body, request));
  KVD_RETURN_IF_ERROR(ReadInput(body, request));
  KVD_RETURN_IF_ERROR(ReadTools(body, request));
  KVD_RETURN_IF_ERROR(ReadToolChoice(body, request));
  KVD_RETURN_IF_ERROR(ReadTextFormat(body, request));
  KVD_RETURN_IF_ERROR(ReadMetadata(body, request));
  KVD_RETURN_IF_ERROR(ReadNumber(body, "max_output_tokens", request.completion.max_tokens));
  if (request.completion.max_tokens && *request.completion.max_tokens < 1) {
    return InvalidParam("max_output_tokens", "'max_output_tokens' must be at least 1");
  }
  KVD_RETURN_IF_ERROR(ReadSamplingJson(body, "temperature", request.completion));
  KVD_RETURN_IF_ERROR(ReadSamplingJson(body, "top_p", request.completion));
  KVD_RETURN_IF_ERROR(ReadExtensions(body, request));
  return request;
}

absl::StatusOr<JsonValue> NormalizeItems(const JsonValue& items, const std::string& param) {
  if (!items.is_array()) return Mistyped(param, "an array of items");
  JsonValue normalized = JsonValue::array();
  for (size_t i = 0; i < items.size(); ++i) {
    KVD_ASSIGN_OR_RETURN(JsonValue item, ReadItem(items[i], absl::StrCat(param, "[", i, "]")));
    normalized.push_back(std::move(item));
  }
  return normalized;
}

json ConversationMessages(const std::optional<std::string>& instructions, const JsonValue& items) {
  json messages = json::array();
  if (instructions) messages.push_back({{"role", "system"}, {"content", *instructions}});
  for (const JsonValue& item : items) {
    const std::string type = item.value("type", std::string());
    if (type == "message") {
      const std::string role = item.value("role", std::string());
      messages.push_back({{"role", role == "developer" ? "system" : role},
                          {"content", item.value("content", std::string())}});
    } else if (type == "function_call") {
      // A run of calls is one assistant turn; text the assistant wrote before them leads it.
      if (messages.empty() || messages.back()["role"] != "assistant") {
        messages.push_back({{"role", "assistant"}, {"content", ""}});
      }
      json& turn = messages.back();
      if (!turn.contains("tool_calls")) turn["tool_calls"] = json::array();
      turn["tool_calls"].push_back({{"id", item.value("call_id", std::string())},
                                    {"type", "function"},
                                    {"function",
                                     {{"name", item.value("name", std::string())},
                                      {"arguments", item.value("arguments", std::string())}}}});
    } else if (type == "function_call_output") {
      messages.push_back({{"role", "tool"},
                          {"tool_call_id", item.value("call_id", std::string())},
                          {"content", item.value("output", std::string())}});
    }
  }
  return messages;
}

}  // namespace kvd::server::responses
