// Fuzzes the gRPC path of a Generate call after the wire: the bytes parsed as a
// v1::GenerateRequest (as gRPC does), converted by server::GenerateRequestToJson and checked by
// server::ParseCompletionParams with the bundled model, as InferenceRpc runs them.
#include "bundled_model_info.h"
#include "server/api/completion_params.h"
#include "server/grpc/generate_request_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const kvd::server::ModelInfo& model = kvd::fuzz::BundledModelInfo();
  kvd::v1::GenerateRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  auto converted = kvd::server::GenerateRequestToJson(request);
  if (!converted.ok()) return 0;
  (void)kvd::server::ParseCompletionParams(converted->body, converted->kind, model);
  return 0;
}
