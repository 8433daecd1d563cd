// A chat request's function calling as its JSON body writes it: `tools`, `tool_choice` and
// `parallel_tool_calls` (OpenAI's shapes), and the tool fields of `messages` (an assistant's
// `tool_calls`, a tool result's `tool_call_id`). Tool definitions keep the key order the client
// wrote (the chat template prints them): the body is read as ordered JSON.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "server/core/completion_request.h"

namespace kvd::server {

// The body keys this reader owns.
inline constexpr std::string_view kToolKeys[] = {"tools", "tool_choice", "parallel_tool_calls"};

// Tools a request may define, at most (OpenAI's limit).
inline constexpr size_t kMaxTools = 128;

// Fills request.tools, tool_choice and parallel_tool_calls from `body`. InvalidArgument with a
// param.
[[nodiscard]] absl::Status ReadToolsJson(const structured::JsonValue& body,
                                         CompletionRequest& request);

// Fills request.tools from `tools`, an array of OpenAI tool entries (both protocols).
[[nodiscard]] absl::Status ReadToolDefinitions(const structured::JsonValue& tools,
                                               CompletionRequest& request);

// Checks the tool fields of message `index`: an assistant's `tool_calls` (each with a string
// id, type "function" and a function with a string name and string JSON arguments: an object,
// or "" for none) and a tool message's `tool_call_id`, a string when given.
[[nodiscard]] absl::Status CheckMessageToolFields(const structured::JsonValue& message,
                                                  size_t index);

// The messages as a chat template reads them: each assistant tool call's `arguments` parsed from
// its JSON text into an object (as vLLM and Hugging Face templates expect).
[[nodiscard]] structured::JsonValue TemplateMessages(const nlohmann::json& messages);

}  // namespace kvd::server
