#include "server/documents_api/document_json.h"

#include <cmath>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "cache_store/store/kv_storage.h"
#include "server/http/error_response.h"

namespace kvd::server {
namespace {

using json = nlohmann::json;

absl::Status RefuseUnknownKeys(const json& object, const std::set<std::string>& known,
                               const std::string& prefix) {
  for (const auto& [key, value] : object.items()) {
    if (known.count(key) == 0) {
      return InvalidParam(prefix + key, absl::StrCat("unsupported parameter '", prefix + key, "'"));
    }
  }
  return absl::OkStatus();
}

// A present, non-null member, or null.
const json* Member(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

// A number, or NaN (which the value check refuses with the ratio's own message).
double NumberOr(const json& value) {
  return value.is_number() ? value.get<double>() : std::nan("");
}

// An integer, or 0 (which the value check refuses with the budget's own message).
int64_t IntegerOr(const json& value) {
  return value.is_number_integer() ? value.get<int64_t>() : 0;
}

absl::Status ReadCompression(const json& value, DocumentUploadRequest& request) {
  if (!value.is_object()) return InvalidParam("compression", "'compression' must be an object");
  if (auto status = RefuseUnknownKeys(
          value, {"method", "ratio", "budget_tokens", "query", "kv_dtype", "merge"},
          "compression.");
      !status.ok()) {
    return status;
  }
  if (const json* method = Member(value, "method")) {
    if (!method->is_string()) {
      return InvalidParam("compression.method", "'compression.method' must be a string");
    }
    request.method = method->get<std::string>();
  }
  if (const json* ratio = Member(value, "ratio")) request.ratio = NumberOr(*ratio);
  if (const json* budget = Member(value, "budget_tokens")) {
    request.budget_tokens = IntegerOr(*budget);
  }
  if (const json* query = Member(value, "query")) {
    if (!query->is_string()) {
      return InvalidParam("compression.query", "'compression.query' must be a string");
    }
    request.query = query->get<std::string>();
  }
  if (const json* kv_dtype = Member(value, "kv_dtype")) {
    if (!kv_dtype->is_string()) {
      return InvalidParam("compression.kv_dtype", "'compression.kv_dtype' must be a string");
    }
    request.kv_dtype = kv_dtype->get<std::string>();
  }
  if (const json* merge = Member(value, "merge")) {
    if (!merge->is_boolean()) {
      return InvalidParam("compression.merge", "'compression.merge' must be a boolean");
    }
    request.merge = merge->get<bool>();
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DocumentUploadRequest> ReadDocumentUploadJson(const json& body) {
  if (auto status = RefuseUnknownKeys(
          body, {"text", "compression", "keep_full", "ttl_seconds", "metadata"}, "");
      !status.ok()) {
    return status;
  }
  DocumentUploadRequest request;
  const json* text = Member(body, "text");
  if (text == nullptr) return InvalidParam("text", "'text' is required: the document, as a string");
  if (!text->is_string()) return InvalidParam("text", "'text' must be a string: the document");
  request.text = text->get<std::string>();
  if (const json* compression = Member(body, "compression")) {
    if (auto status = ReadCompression(*compression, request); !status.ok()) return status;
  }
  if (const json* keep_full = Member(body, "keep_full")) {
    if (!keep_full->is_boolean()) return InvalidParam("keep_full", "'keep_full' must be a boolean");
    request.keep_full = keep_full->get<bool>();
  }
  if (const json* ttl = Member(body, "ttl_seconds")) request.ttl_seconds = NumberOr(*ttl);
  if (const json* metadata = Member(body, "metadata")) request.metadata = *metadata;
  return request;
}

absl::StatusOr<documents::DocumentUpload> ParseDocumentUpload(
    const json& body, const documents::DocumentsConfig& config) {
  absl::StatusOr<DocumentUploadRequest> request = ReadDocumentUploadJson(body);
  if (!request.ok()) return request.status();
  return ResolveDocumentUpload(*std::move(request), config);
}

absl::StatusOr<RecutRequest> ParseRecut(const json& body) {
  if (auto status = RefuseUnknownKeys(body, {"ratio", "budget_tokens"}, ""); !status.ok()) {
    return status;
  }
  RecutRequest recut;
  if (const json* ratio = Member(body, "ratio")) recut.ratio = NumberOr(*ratio);
  if (const json* budget = Member(body, "budget_tokens")) recut.budget_tokens = IntegerOr(*budget);
  if (auto status = CheckRecut(recut); !status.ok()) return status;
  return recut;
}

json DocumentJson(const documents::DocumentView& view) {
  const cache_store::DocumentMeta& meta = view.meta;
  json document = {
      {"id", meta.id},
      {"object", "document"},
      {"status", cache_store::DocumentStatusName(meta.status)},
      {"created_at", absl::ToUnixSeconds(meta.created)},
      {"expires_at",
       meta.expires == absl::InfiniteFuture() ? json() : json(absl::ToUnixSeconds(meta.expires))},
      {"token_count", meta.token_count},
      {"kept_entries", meta.kept_entries},
      {"stored_bytes", meta.stored_bytes},
      {"ratio", meta.identity.ratio},
      {"method", meta.identity.method},
      {"kv_dtype", cache_store::KvStorageName(meta.storage)},
      {"keep_full", meta.keep_full},
      {"merge", meta.merge},
      {"metadata", meta.metadata},
  };
  if (const std::string replica = cache_store::DocumentStore::ReplicaOfDocumentId(meta.id);
      !replica.empty()) {
    document["replica"] = replica;
  }
  if (meta.status == cache_store::DocumentStatus::kProcessing) {
    document["progress"] = std::round(view.progress * 1000.0) / 10.0;  // percent, 0.1 steps
  }
  if (meta.status == cache_store::DocumentStatus::kFailed) {
    document["failure_reason"] = meta.failure_reason;
  }
  return document;
}

}  // namespace kvd::server
