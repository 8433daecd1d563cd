#include "server/anthropic/messages_request.h"

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_details.h"
#include "base/status_macros.h"
#include "server/openai/completion_request_json.h"
#include "server/openai/tools_json.h"
#include "text/bounded_json.h"

namespace kvd::server::anthropic {
namespace {

using json = nlohmann::json;
using structured::JsonValue;

// The body keys of each endpoint; `documents` and `keepkv` are kvd's.
const std::set<std::string>& CountTokensKeys() {
  static const std::set<std::string> keys = {"model", "messages",    "system",
                                             "tools", "tool_choice", "thinking"};
  return keys;
}
const std::set<std::string>& CreateKeys() {
  static const std::set<std::string> keys = [] {
    std::set<std::string> all = CountTokensKeys();
    all.insert({"max_tokens", "stop_sequences", "stream", "temperature", "top_p", "top_k",
                "metadata", "documents", "keepkv", "service_tier"});
    return all;
  }();
  return keys;
}

std::string Quoted(const std::string& param) { return absl::StrCat("'", param, "'"); }

absl::Status Mistyped(const std::string& param, const std::string& type) {
  return InvalidParam(param, absl::StrCat(Quoted(param), " must be ", type));
}

// An integer as int64_t, the largest clamped so that a range check refuses them.
int64_t IntegerOf(const JsonValue& value) {
  if (!value.is_number_unsigned()) return value.get<int64_t>();
  return value.get<uint64_t>() > uint64_t{INT64_MAX} ? INT64_MAX
                                                     : static_cast<int64_t>(value.get<uint64_t>());
}

// A block's keys beyond `type`: those it must have, and those it may (`cache_control` is a hint
// the prefix cache makes needless: every block is cached).
absl::Status CheckBlockKeys(const JsonValue& block, const std::string& param,
                            std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : block.items()) {
    if (key == "type" || key == "cache_control") continue;
    bool known = false;
    for (std::string_view name : allowed) known = known || key == name;
    if (!known) {
      return InvalidParam(param, absl::StrCat("unsupported key '", key, "' in ", Quoted(param)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> BlockType(const JsonValue& block, const std::string& param) {
  if (!block.is_object() || !block.contains("type") || !block["type"].is_string()) {
    return InvalidParam(param, absl::StrCat(Quoted(param), " must be an object with a 'type'"));
  }
  return block["type"].get<std::string>();
}

absl::StatusOr<std::string> TextOf(const JsonValue& block, const std::string& param) {
  KVD_RETURN_IF_ERROR(CheckBlockKeys(block, param, {"text", "citations"}));
  if (!block.contains("text") || !block["text"].is_string()) {
    return Mistyped(absl::StrCat(param, ".text"), "a string");
  }
  if (block.contains("citations") && !block["citations"].is_null() &&
      !(block["citations"].is_array() && block["citations"].empty())) {
    return InvalidParam(param, absl::StrCat(Quoted(param), ": citations are not supported"));
  }
  return block["text"].get<std::string>();
}

// A string, or text blocks joined (`system`, a tool_result's content).
absl::StatusOr<std::string> TextContent(const JsonValue& value, const std::string& param) {
  if (value.is_string()) return value.get<std::string>();
  if (!value.is_array()) return Mistyped(param, "a string or an array of text blocks");
  std::string text;
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string block_param = absl::StrCat(param, "[", i, "]");
    KVD_ASSIGN_OR_RETURN(const std::string type, BlockType(value[i], block_param));
    if (type != "text") {
      return InvalidParam(block_param, absl::StrCat(Quoted(block_param), ": blocks of type '", type,
                                                    "' are not supported here"));
    }
    KVD_ASSIGN_OR_RETURN(const std::string piece, TextOf(value[i], block_param));
    text += piece;
  }
  return text;
}

absl::Status RefuseBlock(const std::string& type, const std::string& param) {
  return InvalidParam(param, absl::StrCat(Quoted(param), ": content blocks of type '", type,
                                          "' are not supported"));
}

// A turn's blocks in order: text blocks joined into `text` (`has_text` once there is one),
// each block of `other_type` handed to `read_other`, any other type refused.
absl::Status ReadTurnBlocks(
    const JsonValue& content, const std::string& param, const std::string& other_type,
    const std::function<absl::Status(const JsonValue&, const std::string&)>& read_other,
    std::string& text, bool& has_text) {
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string block_param = absl::StrCat(param, "[", i, "]");
    const JsonValue& block = content[i];
    const absl::StatusOr<std::string> type = BlockType(block, block_param);
    if (!type.ok()) return type.status();
    if (*type == "text") {
      KVD_ASSIGN_OR_RETURN(const std::string piece, TextOf(block, block_param));
      text += piece;
      has_text = true;
    } else if (*type == other_type) {
      KVD_RETURN_IF_ERROR(read_other(block, block_param));
    } else {
      return RefuseBlock(*type, block_param);
    }
  }
  return absl::OkStatus();
}

// A tool_result block as the `tool` message a template reads.
absl::StatusOr<json> ToolResultMessage(const JsonValue& block, const std::string& param) {
  KVD_RETURN_IF_ERROR(CheckBlockKeys(block, param, {"tool_use_id", "content", "is_error"}));
  if (!block.contains("tool_use_id") || !block["tool_use_id"].is_string()) {
    return Mistyped(absl::StrCat(param, ".tool_use_id"), "the string id of a tool_use");
  }
  std::string result;
  if (block.contains("content") && !block["content"].is_null()) {
    KVD_ASSIGN_OR_RETURN(result, TextContent(block["content"], absl::StrCat(param, ".content")));
  }
  json message = {{"role", "tool"},
                  {"tool_call_id", block["tool_use_id"].get<std::string>()},
                  {"content", std::move(result)}};
  if (block.contains("is_error") && !block["is_error"].is_null()) {
    if (!block["is_error"].is_boolean()) {
      return Mistyped(absl::StrCat(param, ".is_error"), "a boolean");
    }
    if (block["is_error"].get<bool>()) message["is_error"] = true;
  }
  return message;
}

// A tool_use block as the tool call a template reads (`arguments` the input's JSON text).
absl::StatusOr<json> ToolUseCall(const JsonValue& block, const std::string& param) {
  KVD_RETURN_IF_ERROR(CheckBlockKeys(block, param, {"id", "name", "input"}));
  if (!block.contains("id") || !block["id"].is_string() || !block.contains("name") ||
      !block["name"].is_string()) {
    return InvalidParam(param, absl::StrCat(Quoted(param), " needs a string 'id' and 'name'"));
  }
  const JsonValue input = block.value("input", JsonValue::object());
  if (!input.is_object()) return Mistyped(absl::StrCat(param, ".input"), "an object");
  return json{{"id", block["id"].get<std::string>()},
              {"type", "function"},
              {"function",
               {{"name", block["name"].get<std::string>()},
                {"arguments", input.dump(-1, ' ', false, json::error_handler_t::replace)}}}};
}

// A user turn: its tool_result blocks become `tool` messages (in order), its text one user
// message after them.
absl::Status ReadUserTurn(const JsonValue& content, const std::string& param, json& messages) {
  if (content.is_string()) {
    messages.push_back({{"role", "user"}, {"content", content.get<std::string>()}});
    return absl::OkStatus();
  }
  std::string text;
  bool has_text = false;
  KVD_RETURN_IF_ERROR(ReadTurnBlocks(
      content, param, "tool_result",
      [&messages](const JsonValue& block, const std::string& block_param) -> absl::Status {
        KVD_ASSIGN_OR_RETURN(json message, ToolResultMessage(block, block_param));
        messages.push_back(std::move(message));
        return absl::OkStatus();
      },
      text, has_text));
  if (has_text) messages.push_back({{"role", "user"}, {"content", std::move(text)}});
  return absl::OkStatus();
}

// An assistant turn: text joined into its content, tool_use blocks its tool calls.
absl::Status ReadAssistantTurn(const JsonValue& content, const std::string& param, json& messages) {
  json message = {{"role", "assistant"}, {"content", ""}};
  if (content.is_string()) {
    message["content"] = content.get<std::string>();
    messages.push_back(std::move(message));
    return absl::OkStatus();
  }
  std::string text;
  bool has_text = false;
  json calls = json::array();
  KVD_RETURN_IF_ERROR(ReadTurnBlocks(
      content, param, "tool_use",
      [&calls](const JsonValue& block, const std::string& block_param) -> absl::Status {
        KVD_ASSIGN_OR_RETURN(json call, ToolUseCall(block, block_param));
        calls.push_back(std::move(call));
        return absl::OkStatus();
      },
      text, has_text));
  message["content"] = std::move(text);
  if (!calls.empty()) message["tool_calls"] = std::move(calls);
  messages.push_back(std::move(message));
  return absl::OkStatus();
}

absl::Status ReadMessages(const JsonValue& body, CompletionRequest& request) {
  if (body.contains("system") && !body["system"].is_null()) {
    KVD_ASSIGN_OR_RETURN(std::string system, TextContent(body["system"], "system"));
    request.messages.push_back({{"role", "system"}, {"content", std::move(system)}});
  }
  if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty()) {
    return Mistyped("messages", "a non-empty array");
  }
  const JsonValue& messages = body["messages"];
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string param = absl::StrCat("messages[", i, "]");
    const JsonValue& message = messages[i];
    if (!message.is_object()) return Mistyped(param, "an object");
    for (const auto& [key, value] : message.items()) {
      if (key != "role" && key != "content") {
        return InvalidParam(param, absl::StrCat("unsupported key '", key, "' in ", Quoted(param)));
      }
    }
    const std::string role = message.value("role", JsonValue()).is_string()
                                 ? message["role"].get<std::string>()
                                 : std::string();
    if (role != "user" && role != "assistant") {
      return InvalidParam(param + ".role",
                          absl::StrCat(Quoted(param + ".role"), " must be user or assistant"));
    }
    const std::string content_param = param + ".content";
    if (!message.contains("content") ||
        !(message["content"].is_string() || message["content"].is_array())) {
      return Mistyped(content_param, "a string or an array of content blocks");
    }
    KVD_RETURN_IF_ERROR(
        role == "user" ? ReadUserTurn(message["content"], content_param, request.messages)
                       : ReadAssistantTurn(message["content"], content_param, request.messages));
  }
  // A conversation that ends on the assistant's turn is continued, as Anthropic's prefill.
  if (request.messages.back()["role"] == "assistant") request.add_generation_prompt = false;
  return absl::OkStatus();
}

// `tools`: client tools as OpenAI's function entries (names and schemas checked there).
absl::Status ReadTools(const JsonValue& body, CompletionRequest& request) {
  if (!body.contains("tools") || body["tools"].is_null()) return absl::OkStatus();
  const JsonValue& tools = body["tools"];
  if (!tools.is_array()) return Mistyped("tools", "an array");
  JsonValue functions = JsonValue::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string param = absl::StrCat("tools[", i, "]");
    const JsonValue& tool = tools[i];
    if (!tool.is_object()) return Mistyped(param, "an object");
    if (tool.contains("type") && !tool["type"].is_null() && tool["type"] != "custom") {
      return InvalidParam(param, absl::StrCat(Quoted(param),
                                              ": only client tools (type \"custom\", with an "
                                              "input_schema) are supported"));
    }
    KVD_RETURN_IF_ERROR(CheckBlockKeys(tool, param, {"name", "description", "input_schema"}));
    JsonValue function = JsonValue::object();
    function["name"] = tool.value("name", JsonValue());
    if (tool.contains("description")) function["description"] = tool["description"];
    if (!tool.contains("input_schema") || !tool["input_schema"].is_object()) {
      return Mistyped(param + ".input_schema", "a JSON Schema object");
    }
    function["parameters"] = tool["input_schema"];
    functions.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  return ReadToolDefinitions(functions, request);
}

absl::Status ReadToolChoice(const JsonValue& body, CompletionRequest& request) {
  if (!body.contains("tool_choice") || body["tool_choice"].is_null()) return absl::OkStatus();
  const JsonValue& choice = body["tool_choice"];
  const std::string shape =
      "'tool_choice' must be {\"type\": \"auto\" | \"any\" | \"none\"} or {\"type\": \"tool\", "
      "\"name\": ...}, with an optional boolean 'disable_parallel_tool_use'";
  if (!choice.is_object() || !choice.contains("type") || !choice["type"].is_string()) {
    return InvalidParam("tool_choice", shape);
  }
  const std::string type = choice["type"].get<std::string>();
  for (const auto& [key, value] : choice.items()) {
    if (key == "type" || (key == "name" && type == "tool")) continue;
    if (key == "disable_parallel_tool_use" && value.is_boolean()) {
      request.parallel_tool_calls = !value.get<bool>();
      continue;
    }
    return InvalidParam("tool_choice", shape);
  }
  using Kind = ToolChoice::Kind;
  if (type == "auto") {
    request.tool_choice = ToolChoice{Kind::kAuto, ""};
  } else if (type == "any") {
    request.tool_choice = ToolChoice{Kind::kRequired, ""};
  } else if (type == "none") {
    request.tool_choice = ToolChoice{Kind::kNone, ""};
  } else if (type == "tool" && choice.contains("name") && choice["name"].is_string()) {
    request.tool_choice = ToolChoice{Kind::kFunction, choice["name"].get<std::string>()};
  } else {
    return InvalidParam("tool_choice", shape);
  }
  return absl::OkStatus();
}

absl::Status ReadInteger(const JsonValue& body, const char* key, std::optional<int64_t>& out) {
  if (!body.contains(key) || body[key].is_null()) return absl::OkStatus();
  if (!body[key].is_number_integer()) return Mistyped(key, "an integer");
  out = IntegerOf(body[key]);
  return absl::OkStatus();
}

absl::Status ReadSampling(const JsonValue& body, CompletionRequest& request) {
  if (!body.contains("max_tokens") || body["max_tokens"].is_null()) {
    return InvalidParam("max_tokens", "'max_tokens' is required");
  }
  KVD_RETURN_IF_ERROR(ReadInteger(body, "max_tokens", request.max_tokens));
  if (*request.max_tokens < 1) return InvalidParam("max_tokens", "'max_tokens' must be at least 1");
  for (const char* name : {"temperature", "top_p", "top_k"}) {
    KVD_RETURN_IF_ERROR(ReadSamplingJson(body, name, request));
  }
  if (body.contains("stop_sequences") && !body["stop_sequences"].is_null()) {
    const JsonValue& stop = body["stop_sequences"];
    if (!stop.is_array()) return Mistyped("stop_sequences", "an array of strings");
    for (const JsonValue& entry : stop) {
      if (!entry.is_string()) return Mistyped("stop_sequences", "an array of strings");
      request.stop.push_back(entry.get<std::string>());
    }
  }
  if (body.contains("stream") && !body["stream"].is_null()) {
    if (!body["stream"].is_boolean()) return Mistyped("stream", "a boolean");
    request.stream = body["stream"].get<bool>();
  }
  if (body.contains("metadata") && !body["metadata"].is_null()) {
    const JsonValue& metadata = body["metadata"];
    if (!metadata.is_object()) return Mistyped("metadata", "an object");
    for (const auto& [key, value] : metadata.items()) {
      if (key != "user_id") {
        return InvalidParam("metadata", absl::StrCat("unsupported key 'metadata.", key, "'"));
      }
      if (value.is_null()) continue;
      if (!value.is_string()) return Mistyped("metadata.user_id", "a string");
      request.user = value.get<std::string>();
    }
  }
  if (body.contains("service_tier") && !body["service_tier"].is_null() &&
      body["service_tier"] != "auto" && body["service_tier"] != "standard_only") {
    return InvalidParam("service_tier", "'service_tier' must be auto or standard_only");
  }
  return absl::OkStatus();
}

// kvd's own fields, as chat reads them.
absl::Status ReadExtensions(const JsonValue& body, CompletionRequest& request) {
  if (body.contains("documents") && !body["documents"].is_null()) {
    const JsonValue& documents = body["documents"];
    if (!documents.is_array()) return Mistyped("documents", "an array of document ids");
    for (const JsonValue& id : documents) {
      if (!id.is_string()) return Mistyped("documents", "an array of document ids");
      request.documents.push_back(id.get<std::string>());
    }
  }
  KVD_ASSIGN_OR_RETURN(request.keepkv, ReadKeepKvJson(body));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CompletionRequest> ReadMessagesRequest(std::string_view text,
                                                      MessagesEndpoint endpoint) {
  KVD_ASSIGN_OR_RETURN(const JsonValue body,
                       text::ParseBoundedJson<JsonValue>(text, "the request body"));
  if (!body.is_object())
    return absl::InvalidArgumentError("the request body must be a JSON object");
  const auto& keys = endpoint == MessagesEndpoint::kCreate ? CreateKeys() : CountTokensKeys();
  for (const auto& [key, value] : body.items()) {
    if (keys.count(key) == 0) {
      return InvalidParam(key, absl::StrCat("unsupported parameter '", key, "'"));
    }
  }
  CompletionRequest request;
  request.kind = ApiKind::kChat;
  if (body.contains("model") && !body["model"].is_null()) {
    if (!body["model"].is_string()) return Mistyped("model", "a string");
    request.model = body["model"].get<std::string>();
  }
  if (body.contains("thinking") && !body["thinking"].is_null() &&
      !(body["thinking"].is_object() && body["thinking"].contains("type") &&
        body["thinking"]["type"] == "disabled")) {
    return InvalidParam("thinking", "extended thinking is not supported");
  }
  KVD_RETURN_IF_ERROR(ReadMessages(body, request));
  KVD_RETURN_IF_ERROR(ReadTools(body, request));
  KVD_RETURN_IF_ERROR(ReadToolChoice(body, request));
  if (endpoint == MessagesEndpoint::kCreate) {
    KVD_RETURN_IF_ERROR(ReadSampling(body, request));
    KVD_RETURN_IF_ERROR(ReadExtensions(body, request));
  }
  return request;
}

}  // namespace kvd::server::anthropic
