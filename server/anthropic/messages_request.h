// The body of Anthropic's POST /v1/messages (and /v1/messages/count_tokens) read into the one
// typed request every front end fills (server/core/completion_request.h): `system`, `messages`
// of text, tool_use and tool_result blocks, `tools` and `tool_choice`, the sampling fields and
// kvd's own `documents` and `keepkv`. The conversation becomes the chat messages a chat
// template reads (a tool_use block an assistant tool call, a tool_result block a `tool`
// message), the tools OpenAI-shaped function entries with the client's key order. What of the
// API kvd does not do (images, documents as blocks, extended thinking, server tools) is an
// InvalidArgument naming the field, never ignored. Values are checked later, by the resolver.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "server/core/completion_request.h"

namespace kvd::server::anthropic {

enum class MessagesEndpoint {
  kCreate,       // POST /v1/messages: max_tokens required
  kCountTokens,  // POST /v1/messages/count_tokens: no sampling fields
};

[[nodiscard]] absl::StatusOr<CompletionRequest> ReadMessagesRequest(std::string_view body,
                                                                    MessagesEndpoint endpoint);

}  // namespace kvd::server::anthropic
