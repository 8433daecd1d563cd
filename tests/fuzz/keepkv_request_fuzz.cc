// Fuzzes a completion body's `keepkv` (server::ReadKeepKvJson) over the tenant's defaults
// (server::ResolveKeepKv; off, and on as a tenant's config may set them): what it accepts must
// pass Validate.
#include "fuzz_support.h"
#include "server/core/keepkv_request.h"
#include "server/openai/completion_request_json.h"
#include "server/openai/openai_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const kvd::server::KeepKvConfig defaults_off;
  static const kvd::server::KeepKvConfig defaults_on{.enabled = true,
                                                     .params = {.budget = {.tokens = 64}}};
  auto body =
      kvd::server::ParseJsonObjectBody<kvd::structured::JsonValue>(kvd::fuzz::AsText(data, size));
  if (!body.ok()) return 0;
  auto keepkv = kvd::server::ReadKeepKvJson(*body);
  if (!keepkv.ok()) return 0;
  for (const kvd::server::KeepKvConfig* defaults : {&defaults_off, &defaults_on}) {
    auto params = kvd::server::ResolveKeepKv(*keepkv, *defaults);
    if (params.ok() && params->has_value()) {
      kvd::fuzz::Require((*params)->Validate().ok(), "accepted keepkv fails Validate");
    }
  }
  return 0;
}
