// Fuzzes the gRPC path of a Generate call after the wire: the bytes parsed as a
// v1::GenerateRequest (as gRPC does), converted by server::GenerateRequestToJson and checked by
// server::ParseCompletionParams with the bundled model, as InferenceRpc runs them.
#include "fuzz_support.h"
#include "server/api/completion_params.h"
#include "server/grpc/generate_request_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const kvd::server::ModelInfo* model = [] {
    const kvd::fuzz::BundledModel& bundled = kvd::fuzz::Bundled();
    return new kvd::server::ModelInfo{.config = &bundled.config,
                                      .tokenizer = bundled.tokenizer.get(),
                                      .chat_template = bundled.chat_template.get(),
                                      .name = "kvd-tiny"};
  }();
  kvd::v1::GenerateRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  auto converted = kvd::server::GenerateRequestToJson(request);
  if (!converted.ok()) return 0;
  (void)kvd::server::ParseCompletionParams(converted->body, converted->kind, *model);
  return 0;
}
