// Fuzzes server::ParseCompletionParams on request bodies of /v1/completions and
// /v1/chat/completions (after ParseJsonObjectBody), with the bundled model: prompts, messages
// rendered by its chat template, sampling, stop, logit_bias, logprobs and keepkv.
#include "bundled_model_info.h"
#include "server/api/completion_params.h"
#include "server/api/openai_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const kvd::engine::ServedModel& model = kvd::fuzz::BundledModelInfo();
  static const kvd::server::KeepKvConfig keepkv_on{.enabled = true};
  auto body = kvd::server::ParseJsonObjectBody(kvd::fuzz::AsText(data, size));
  if (!body.ok()) return 0;
  for (kvd::server::ApiKind kind :
       {kvd::server::ApiKind::kCompletion, kvd::server::ApiKind::kChat}) {
    (void)kvd::server::ParseCompletionParams(*body, kind, model);
    (void)kvd::server::ParseCompletionParams(*body, kind, model, nullptr, &keepkv_on);
  }
  return 0;
}
