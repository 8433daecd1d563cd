// gRPC's document messages read into the typed requests an HTTP body also becomes
// (api/document_request.h): an UploadHeader with its text, a RecutRequest. The values are
// checked after, by the same code for both protocols.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "kvd/v1/documents.pb.h"
#include "server/core/document_request.h"

namespace kvd::server {

// InvalidArgument (param "metadata_json") for metadata_json that is not JSON.
[[nodiscard]] absl::StatusOr<DocumentUploadRequest> ReadUploadHeader(const v1::UploadHeader& header,
                                                                     std::string text);

RecutRequest ReadRecutRequest(const v1::RecutRequest& request);

}  // namespace kvd::server
