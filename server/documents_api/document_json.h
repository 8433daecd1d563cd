// The JSON of the documents API: an upload or re-cut body checked field by field (unknown
// fields refused, every error naming its parameter), and a document as the API reports it.
#pragma once

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "documents/document_service.h"
#include "nlohmann/json.hpp"
#include "server/core/document_request.h"

namespace kvd::server {

// POST /v1/documents: {"text", "compression": {"method", "ratio" | "budget_tokens", "query",
// "kv_dtype", "merge"}, "keep_full", "ttl_seconds", "metadata"} as sent (document_request.h).
[[nodiscard]] absl::StatusOr<DocumentUploadRequest> ReadDocumentUploadJson(
    const nlohmann::json& body);
// ReadDocumentUploadJson, then ResolveDocumentUpload: what is left out comes from `config`.
[[nodiscard]] absl::StatusOr<documents::DocumentUpload> ParseDocumentUpload(
    const nlohmann::json& body, const documents::DocumentsConfig& config);

// POST /v1/documents/{id}/recut: {"ratio"} or {"budget_tokens"}, read and checked (CheckRecut).
[[nodiscard]] absl::StatusOr<RecutRequest> ParseRecut(const nlohmann::json& body);

// {"id", "object": "document", "status", "progress", "failure_reason", "created_at",
//  "expires_at", "token_count", "kept_entries", "stored_bytes", "ratio", "method", "kv_dtype",
//  "keep_full", "merge", "metadata", "replica"}; times in Unix seconds, expires_at null for
//  never;
// replica (the one that stores it) only when the id names one.
nlohmann::json DocumentJson(const documents::DocumentView& view);

}  // namespace kvd::server
