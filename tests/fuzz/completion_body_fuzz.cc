// Fuzzes server::ParseCompletionParams on request bodies of /v1/completions and
// /v1/chat/completions (after ParseJsonObjectBody), with the bundled model: prompts, messages
// rendered by its chat template, sampling, stop, logit_bias, logprobs and keepkv; then chat
// with tools (structured outputs and forced calls compiled) under a template that takes them.
// The body's value is held to nlohmann's own parse of it: the bounded parser builds objects
// through a key index of its own and must build the same value.
#include "bundled_model_info.h"
#include "fuzz_support.h"
#include "server/core/completion_params.h"
#include "server/openai/completion_request_json.h"
#include "server/openai/openai_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const kvd::engine::ServedModel& model = kvd::fuzz::BundledModelInfo();
  static const kvd::server::KeepKvConfig keepkv_on{.enabled = true};
  const std::string_view text = kvd::fuzz::AsText(data, size);
  auto body = kvd::server::ParseJsonObjectBody<kvd::structured::JsonValue>(text);
  if (!body.ok()) return 0;
  kvd::fuzz::Require(
      *body == kvd::structured::JsonValue::parse(text, nullptr, /*allow_exceptions=*/false),
      "the bounded parse equals nlohmann's");
  for (kvd::server::ApiKind kind :
       {kvd::server::ApiKind::kCompletion, kvd::server::ApiKind::kChat}) {
    (void)kvd::server::ParseCompletionParams(*body, kind, model);
    (void)kvd::server::ParseCompletionParams(*body, kind, model, nullptr, &keepkv_on);
  }
  auto chat = kvd::server::ReadCompletionRequestJson(*body, kvd::server::ApiKind::kChat);
  if (chat.ok()) {
    (void)kvd::server::ResolveCompletionParams(*chat, kvd::fuzz::ToolsModelInfo(), nullptr, nullptr,
                                               &kvd::fuzz::BundledConstraints(),
                                               kvd::structured::ToolCallSyntax::kHermes);
  }
  return 0;
}
