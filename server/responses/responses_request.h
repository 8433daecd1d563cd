// The body of OpenAI's POST /v1/responses read into the one typed request every front end
// fills (server/core/completion_request.h) and what the Responses API adds around it: `input` as
// a string or items (messages with text parts, function_call, function_call_output),
// `instructions`, function `tools` and `tool_choice`, `text.format`, `max_output_tokens`,
// sampling, `metadata`, `store` and `previous_response_id`, and kvd's own `documents`,
// `keepkv`, `seed` and `top_k`. One ordered parse. What of the API kvd does not do (built-in
// tools, reasoning, background mode, images and files) is an InvalidArgument naming the field.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "server/core/completion_request.h"
#include "structured/json_rules.h"

namespace kvd::server::responses {

struct ResponsesRequest {
  // Everything but the conversation: completion.messages is filled by ConversationMessages
  // once the previous response's items are known.
  CompletionRequest completion;
  std::optional<std::string> instructions;
  structured::JsonValue input_items = structured::JsonValue::array();  // normalized
  std::optional<std::string> previous_response_id;
  bool store = true;
  // Echoed in the response object as the client set them.
  structured::JsonValue tools = structured::JsonValue::array();
  structured::JsonValue tool_choice = "auto";
  structured::JsonValue text_format = {{"type", "text"}};
  structured::JsonValue metadata = structured::JsonValue::object();
};

[[nodiscard]] absl::StatusOr<ResponsesRequest> ReadResponsesRequest(std::string_view body);

// `items` read as `input` items are (what the store kept is checked again before it is used),
// normalized; InvalidArgument naming `param`[i] otherwise.
[[nodiscard]] absl::StatusOr<structured::JsonValue> NormalizeItems(
    const structured::JsonValue& items, const std::string& param);

// The chat messages a template reads for `instructions` (a system message, when given) and
// `items` (normalized input and output items, oldest first): message items by role, a run of
// function_call items one assistant turn's tool calls, function_call_output items tool
// messages.
nlohmann::json ConversationMessages(const std::optional<std::string>& instructions,
                                    const structured::JsonValue& items);

}  // namespace kvd::server::responses
