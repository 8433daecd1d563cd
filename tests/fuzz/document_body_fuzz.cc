// Fuzzes server::ParseDocumentUpload and ParseRecut on bodies of POST /v1/documents and
// /v1/documents/{id}/recut (after ParseJsonObjectBody), with the default documents config.
#include "fuzz_support.h"
#include "server/documents_api/document_json.h"
#include "server/openai/openai_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const kvd::documents::DocumentsConfig config;
  auto body = kvd::server::ParseJsonObjectBody(kvd::fuzz::AsText(data, size));
  if (!body.ok()) return 0;
  (void)kvd::server::ParseDocumentUpload(*body, config);
  (void)kvd::server::ParseRecut(*body);
  return 0;
}
