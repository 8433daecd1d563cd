// Fuzzes Anthropic's POST /v1/messages and /v1/messages/count_tokens bodies:
// anthropic::ReadMessagesRequest (system, content blocks, tools, tool_choice, sampling), then
// ResolveCompletionParams under a hermes tools template with constraints compiled, as a request
// is started. Property: a body the reader accepts holds at most one system message, first, and
// every tool message names the call it answers.
#include "bundled_model_info.h"
#include "server/anthropic/messages_request.h"
#include "server/core/completion_params.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kvd::server::anthropic::MessagesEndpoint;
  const std::string_view text = kvd::fuzz::AsText(data, size);
  for (MessagesEndpoint endpoint : {MessagesEndpoint::kCreate, MessagesEndpoint::kCountTokens}) {
    auto request = kvd::server::anthropic::ReadMessagesRequest(text, endpoint);
    if (!request.ok()) continue;
    for (size_t i = 0; i < request->messages.size(); ++i) {
      const auto& message = request->messages[i];
      const std::string role = message.value("role", std::string());
      if (role == "system" && i != 0) __builtin_trap();
      if (role == "tool" &&
          !(message.contains("tool_call_id") && message["tool_call_id"].is_string())) {
        __builtin_trap();
      }
    }
    (void)kvd::server::ResolveCompletionParams(*request, kvd::fuzz::ToolsModelInfo(), nullptr,
                                               nullptr, &kvd::fuzz::BundledConstraints(),
                                               kvd::structured::ToolCallSyntax::kHermes);
  }
  return 0;
}
