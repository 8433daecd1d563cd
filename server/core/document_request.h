// A document upload or re-cut as a client sent it, in the one typed form both protocols fill:
// HTTP's JSON body (document_json.h) and gRPC's UploadHeader with its text or RecutRequest
// (grpc/upload_request.h). A reader checks only what its wire format can get wrong (types,
// shapes, unknown keys); ResolveDocumentUpload and CheckRecut check the values, once for both.
// An empty optional is a field the client left out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "documents/documents_config.h"
#include "documents/upload_plan.h"
#include "nlohmann/json.hpp"

namespace kvd::server {

struct DocumentUploadRequest {
  std::string text;
  std::optional<std::string> method;  // compression.method; empty: documents.default_method
  std::optional<double> ratio;
  std::optional<int64_t> budget_tokens;
  std::string query;
  std::optional<std::string> kv_dtype;  // compression.kv_dtype; empty: documents.default_kv_dtype
  bool merge = false;                   // compression.merge
  bool keep_full = false;
  std::optional<double> ttl_seconds;
  std::optional<nlohmann::json> metadata;  // as sent; it must be an object
};

// The upload with the server's defaults for what it leaves out. InvalidArgument naming the
// param: "compression.method" or "compression.kv_dtype" unknown, "compression.ratio" outside (0, 1]
// or given with budget_tokens, "compression.budget_tokens" under 1, "ttl_seconds" not a positive
// number, "metadata" not an object of at most 16 KiB.
[[nodiscard]] absl::StatusOr<documents::DocumentUpload> ResolveDocumentUpload(
    DocumentUploadRequest request, const documents::DocumentsConfig& config);

struct RecutRequest {
  std::optional<double> ratio;
  std::optional<int64_t> budget_tokens;
};

// InvalidArgument naming the param unless exactly one of a ratio in (0, 1] and a budget of at
// least 1 token is given.
[[nodiscard]] absl::Status CheckRecut(const RecutRequest& request);

}  // namespace kvd::server
