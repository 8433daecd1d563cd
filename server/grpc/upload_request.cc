#include "server/grpc/upload_request.h"

#include <utility>

#include "base/status_details.h"
#include "text/bounded_json.h"

namespace kvd::server {

absl::StatusOr<DocumentUploadRequest> ReadUploadHeader(const v1::UploadHeader& header,
                                                       std::string text) {
  DocumentUploadRequest request;
  request.text = std::move(text);
  const v1::Compression& compression = header.compression();
  if (!compression.method().empty()) request.method = compression.method();
  if (compression.has_ratio()) request.ratio = compression.ratio();
  if (compression.has_budget_tokens()) request.budget_tokens = compression.budget_tokens();
  request.query = compression.query();
  if (!compression.kv_dtype().empty()) request.kv_dtype = compression.kv_dtype();
  request.merge = compression.merge();
  request.keep_full = header.keep_full();
  if (header.has_ttl_seconds()) request.ttl_seconds = header.ttl_seconds();
  if (!header.metadata_json().empty()) {
    absl::StatusOr<nlohmann::json> metadata =
        text::ParseBoundedJson(header.metadata_json(), "metadata_json");
    if (!metadata.ok()) return WithParam(metadata.status(), "metadata_json");
    request.metadata = *std::move(metadata);
  }
  return request;
}

RecutRequest ReadRecutRequest(const v1::RecutRequest& request) {
  RecutRequest recut;
  if (request.has_ratio()) recut.ratio = request.ratio();
  if (request.has_budget_tokens()) recut.budget_tokens = request.budget_tokens();
  return recut;
}

}  // namespace kvd::server
