// Fuzzes OpenAI's POST /v1/responses bodies: responses::ReadResponsesRequest (input items,
// tools, tool_choice, text.format, metadata), the conversation a template reads, then
// ResolveCompletionParams under a hermes tools template with constraints compiled, as a request
// is started. Properties: normalized input items read back as themselves (what the store keeps
// is read that way), and the conversation has one message per item but for runs of calls.
#include "bundled_model_info.h"
#include "server/core/completion_params.h"
#include "server/responses/responses_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace responses = kvd::server::responses;
  auto request = responses::ReadResponsesRequest(kvd::fuzz::AsText(data, size));
  if (!request.ok()) return 0;
  auto again = responses::NormalizeItems(request->input_items, "stored");
  if (!again.ok() || *again != request->input_items) __builtin_trap();
  request->completion.messages =
      responses::ConversationMessages(request->instructions, request->input_items);
  if (request->completion.messages.size() >
      request->input_items.size() + (request->instructions ? 1 : 0)) {
    __builtin_trap();
  }
  (void)kvd::server::ResolveCompletionParams(request->completion, kvd::fuzz::ToolsModelInfo(),
                                             nullptr, nullptr, &kvd::fuzz::BundledConstraints(),
                                             kvd::structured::ToolCallSyntax::kHermes);
  return 0;
}
