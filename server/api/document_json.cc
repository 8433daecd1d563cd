#include "server/api/document_json.h"

#include <cmath>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "server/http/error_response.h"

namespace kvd::server {
namespace {

using json = nlohmann::json;

absl::Status Invalid(const std::string& param, std::string message) {
  return WithParam(absl::InvalidArgumentError(std::move(message)), param);
}

absl::Status RefuseUnknownKeys(const json& object, const std::set<std::string>& known,
                               const std::string& prefix) {
  for (const auto& [key, value] : object.items()) {
    if (known.count(key) == 0) {
      return Invalid(prefix + key, absl::StrCat("unsupported parameter '", prefix + key, "'"));
    }
  }
  return absl::OkStatus();
}

// A present, non-null member, or null.
const json* Member(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

absl::StatusOr<double> Ratio(const json& value, const std::string& param) {
  if (!value.is_number() || !(value.get<double>() > 0.0 && value.get<double>() <= 1.0)) {
    return Invalid(param, absl::StrCat("'", param,
                                       "' must be a number in (0, 1]: the fraction of the "
                                       "document's KV entries kept"));
  }
  return value.get<double>();
}

absl::StatusOr<int64_t> Budget(const json& value, const std::string& param) {
  if (!value.is_number_integer() || value.get<int64_t>() < 1) {
    return Invalid(param, absl::StrCat("'", param, "' must be an integer of at least 1"));
  }
  return value.get<int64_t>();
}

absl::Status ParseCompression(const json& value, cache_store::CompressionSpec& spec,
                              bool& ratio_given) {
  if (!value.is_object()) return Invalid("compression", "'compression' must be an object");
  if (auto status =
          RefuseUnknownKeys(value, {"method", "ratio", "budget_tokens", "query"}, "compression.");
      !status.ok()) {
    return status;
  }
  if (const json* method = Member(value, "method")) {
    if (!method->is_string()) {
      return Invalid("compression.method", "'compression.method' must be a string");
    }
    auto parsed = cache_store::ParseCompressionMethod(method->get<std::string>());
    if (!parsed.ok()) return WithParam(parsed.status(), "compression.method");
    spec.method = *parsed;
  }
  const json* ratio = Member(value, "ratio");
  const json* budget = Member(value, "budget_tokens");
  if (ratio != nullptr && budget != nullptr) {
    return Invalid("compression.ratio", "give 'compression.ratio' or 'budget_tokens', not both");
  }
  if (ratio != nullptr) {
    auto parsed = Ratio(*ratio, "compression.ratio");
    if (!parsed.ok()) return parsed.status();
    spec.ratio = *parsed;
    ratio_given = true;
  }
  if (budget != nullptr) {
    auto parsed = Budget(*budget, "compression.budget_tokens");
    if (!parsed.ok()) return parsed.status();
    spec.budget_tokens = *parsed;
    ratio_given = true;
  }
  if (const json* query = Member(value, "query")) {
    if (!query->is_string()) {
      return Invalid("compression.query", "'compression.query' must be a string");
    }
    spec.query = query->get<std::string>();
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<documents::DocumentUpload> ParseDocumentUpload(
    const json& body, const documents::DocumentsConfig& config) {
  if (auto status = RefuseUnknownKeys(
          body, {"text", "compression", "keep_full", "ttl_seconds", "metadata"}, "");
      !status.ok()) {
    return status;
  }
  documents::DocumentUpload upload;
  const json* text = Member(body, "text");
  if (text == nullptr || !text->is_string()) {
    return Invalid("text", "'text' is required: the document, as a string");
  }
  upload.text = text->get<std::string>();
  cache_store::CompressionSpec& spec = upload.compression;
  // The server's default method applies only when the upload names none.
  auto method = cache_store::ParseCompressionMethod(config.default_method);
  if (!method.ok()) return method.status();
  spec.method = *method;
  bool ratio_given = false;
  if (const json* compression = Member(body, "compression")) {
    if (auto status = ParseCompression(*compression, spec, ratio_given); !status.ok()) {
      return status;
    }
  }
  if (!ratio_given) {
    spec.ratio = spec.method == cache_store::CompressionMethod::kNone ? 1.0 : config.default_ratio;
  }
  if (const json* keep_full = Member(body, "keep_full")) {
    if (!keep_full->is_boolean()) return Invalid("keep_full", "'keep_full' must be a boolean");
    upload.keep_full = keep_full->get<bool>();
  }
  if (const json* ttl = Member(body, "ttl_seconds")) {
    if (!ttl->is_number() || !(ttl->get<double>() > 0.0) || !std::isfinite(ttl->get<double>())) {
      return Invalid("ttl_seconds", "'ttl_seconds' must be a positive number of seconds");
    }
    upload.ttl = absl::Seconds(ttl->get<double>());
  }
  if (const json* metadata = Member(body, "metadata")) {
    if (!metadata->is_object()) return Invalid("metadata", "'metadata' must be an object");
    if (metadata->dump().size() > 16 * 1024) {
      return Invalid("metadata", "'metadata' must encode to at most 16 KiB");
    }
    upload.metadata = *metadata;
  }
  return upload;
}

absl::StatusOr<RecutRequest> ParseRecut(const json& body) {
  if (auto status = RefuseUnknownKeys(body, {"ratio", "budget_tokens"}, ""); !status.ok()) {
    return status;
  }
  RecutRequest recut;
  const json* ratio = Member(body, "ratio");
  const json* budget = Member(body, "budget_tokens");
  if ((ratio == nullptr) == (budget == nullptr)) {
    return Invalid("ratio", "give exactly one of 'ratio' and 'budget_tokens'");
  }
  if (ratio != nullptr) {
    auto parsed = Ratio(*ratio, "ratio");
    if (!parsed.ok()) return parsed.status();
    recut.ratio = *parsed;
  } else {
    auto parsed = Budget(*budget, "budget_tokens");
    if (!parsed.ok()) return parsed.status();
    recut.budget_tokens = *parsed;
  }
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
      {"ratio", meta.ratio},
      {"method", meta.method},
      {"keep_full", meta.keep_full},
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
