// Fuzzes the gRPC path of a document upload and re-cut after the wire: the bytes parsed as a
// v1::UploadRequest (as gRPC does), its header read by server::ReadUploadHeader with its text
// and checked by server::ResolveDocumentUpload with the default documents config; and as a
// v1::RecutRequest, read by ReadRecutRequest and checked by CheckRecut. What is accepted keeps
// the API's ranges.
#include <cmath>

#include "fuzz_support.h"
#include "server/core/document_request.h"
#include "server/grpc/upload_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const kvd::documents::DocumentsConfig config;
  kvd::v1::UploadRequest part;
  if (part.ParseFromArray(data, static_cast<int>(size)) && part.has_header()) {
    auto request = kvd::server::ReadUploadHeader(part.header(), "the document");
    if (request.ok()) {
      auto upload = kvd::server::ResolveDocumentUpload(*std::move(request), config);
      if (upload.ok()) {
        const kvd::cache_store::CompressionSpec& spec = upload->compression;
        kvd::fuzz::Require(spec.budget_tokens ? *spec.budget_tokens >= 1
                                              : spec.ratio > 0.0 && spec.ratio <= 1.0,
                           "accepted compression outside its range");
        kvd::fuzz::Require(!upload->ttl || *upload->ttl > absl::ZeroDuration(),
                           "accepted ttl not positive");
        kvd::fuzz::Require(upload->metadata.is_object(), "accepted metadata not an object");
      }
    }
  }
  kvd::v1::RecutRequest recut;
  if (recut.ParseFromArray(data, static_cast<int>(size))) {
    const kvd::server::RecutRequest read = kvd::server::ReadRecutRequest(recut);
    if (kvd::server::CheckRecut(read).ok()) {
      kvd::fuzz::Require(read.ratio.has_value() != read.budget_tokens.has_value(),
                         "accepted re-cut without exactly one of ratio and budget");
    }
  }
  return 0;
}
