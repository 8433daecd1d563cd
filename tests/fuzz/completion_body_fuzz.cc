// Fuzzes server::ParseCompletionParams on request bodies of /v1/completions and
// /v1/chat/completions (after ParseJsonObjectBody), with the bundled model: prompts, messages
// rendered by its chat template, sampling, stop, logit_bias, logprobs and keepkv.
#include "fuzz_support.h"
#include "server/api/completion_params.h"
#include "server/api/openai_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const kvd::server::ModelInfo* model = [] {
    const kvd::fuzz::BundledModel& bundled = kvd::fuzz::Bundled();
    return new kvd::server::ModelInfo{.config = &bundled.config,
                                      .tokenizer = bundled.tokenizer.get(),
                                      .chat_template = bundled.chat_template.get(),
                                      .name = "kvd-tiny"};
  }();
  static const kvd::server::KeepKvConfig keepkv_on{.enabled = true};
  auto body = kvd::server::ParseJsonObjectBody(kvd::fuzz::AsText(data, size));
  if (!body.ok()) return 0;
  for (kvd::server::ApiKind kind :
       {kvd::server::ApiKind::kCompletion, kvd::server::ApiKind::kChat}) {
    (void)kvd::server::ParseCompletionParams(*body, kind, *model);
    (void)kvd::server::ParseCompletionParams(*body, kind, *model, nullptr, &keepkv_on);
  }
  return 0;
}
