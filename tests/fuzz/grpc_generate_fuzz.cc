// Fuzzes the gRPC path of a Generate call after the wire: the bytes parsed as a
// v1::GenerateRequest (as gRPC does), read by server::ReadGenerateRequest and checked by
// server::ResolveCompletionParams with the bundled model, as InferenceRpc runs them, and with a
// template that takes tools (forced calls and structured outputs compiled).
#include "bundled_model_info.h"
#include "server/core/completion_params.h"
#include "server/grpc/generate_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const kvd::engine::ServedModel& model = kvd::fuzz::BundledModelInfo();
  static const kvd::server::KeepKvConfig keepkv_on{.enabled = true};
  kvd::v1::GenerateRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  auto read = kvd::server::ReadGenerateRequest(request);
  if (!read.ok()) return 0;
  (void)kvd::server::ResolveCompletionParams(*read, model);
  (void)kvd::server::ResolveCompletionParams(*read, model, nullptr, &keepkv_on);
  (void)kvd::server::ResolveCompletionParams(*read, kvd::fuzz::ToolsModelInfo(), nullptr, nullptr,
                                             &kvd::fuzz::BundledConstraints(),
                                             kvd::structured::ToolCallSyntax::kHermes);
  return 0;
}
