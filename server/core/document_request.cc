#include "server/core/document_request.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_details.h"
#include "cache_store/store/kv_storage.h"
#include "text/utf8.h"

namespace kvd::server {
namespace {

constexpr size_t kMaxMetadataBytes = 16 * 1024;

absl::Status CheckRatio(double ratio, const std::string& param) {
  if (ratio > 0.0 && ratio <= 1.0) return absl::OkStatus();
  return InvalidParam(param, absl::StrCat("'", param,
                                          "' must be a number in (0, 1]: the fraction of the "
                                          "document's KV entries kept"));
}

absl::Status CheckBudget(int64_t budget_tokens, const std::string& param) {
  if (budget_tokens >= 1) return absl::OkStatus();
  return InvalidParam(param, absl::StrCat("'", param, "' must be an integer of at least 1"));
}

}  // namespace

absl::StatusOr<documents::DocumentUpload> ResolveDocumentUpload(
    DocumentUploadRequest request, const documents::DocumentsConfig& config) {
  // JSON has refused text that is not UTF-8 already; gRPC's text arrives as bytes.
  if (!text::IsValidUtf8(request.text)) return InvalidParam("text", "the text is not valid UTF-8");
  documents::DocumentUpload upload;
  upload.text = std::move(request.text);
  cache_store::CompressionSpec& spec = upload.compression;
  // The server's default method applies only when the upload names none.
  auto method = cache_store::ParseCompressionMethod(request.method.value_or(config.default_method));
  if (!method.ok()) return WithParam(method.status(), "compression.method");
  spec.method = *method;
  if (request.ratio && request.budget_tokens) {
    return InvalidParam("compression.ratio",
                        "give 'compression.ratio' or 'budget_tokens', not both");
  }
  if (request.ratio) {
    if (auto status = CheckRatio(*request.ratio, "compression.ratio"); !status.ok()) {
      return status;
    }
    spec.ratio = *request.ratio;
  } else if (request.budget_tokens) {
    if (auto status = CheckBudget(*request.budget_tokens, "compression.budget_tokens");
        !status.ok()) {
      return status;
    }
    spec.budget_tokens = *request.budget_tokens;
  } else {
    spec.ratio = spec.method == cache_store::CompressionMethod::kNone ? 1.0 : config.default_ratio;
  }
  spec.query = std::move(request.query);
  auto kv_dtype = cache_store::ParseKvStorage(request.kv_dtype.value_or(config.default_kv_dtype));
  if (!kv_dtype.ok()) return WithParam(kv_dtype.status(), "compression.kv_dtype");
  spec.kv_dtype = *kv_dtype;
  spec.merge = request.merge;
  upload.keep_full = request.keep_full;
  if (request.ttl_seconds) {
    const double ttl = *request.ttl_seconds;
    // A positive number too small for a Duration (1e-300) would round to none at all, and one
    // too large (1e300) to a Duration that never ends: no expiry, which is leaving ttl out.
    if (!(ttl > 0.0) || !std::isfinite(ttl) || absl::Seconds(ttl) <= absl::ZeroDuration() ||
        absl::Seconds(ttl) == absl::InfiniteDuration()) {
      return InvalidParam("ttl_seconds",
                          "'ttl_seconds' must be a positive number of seconds a duration can hold");
    }
    upload.ttl = absl::Seconds(ttl);
  }
  if (request.metadata) {
    if (!request.metadata->is_object())
      return InvalidParam("metadata", "'metadata' must be an object");
    if (request.metadata->dump().size() > kMaxMetadataBytes) {
      return InvalidParam("metadata", "'metadata' must encode to at most 16 KiB");
    }
    upload.metadata = *std::move(request.metadata);
  }
  return upload;
}

absl::Status CheckRecut(const RecutRequest& request) {
  if (request.ratio.has_value() == request.budget_tokens.has_value()) {
    return InvalidParam("ratio", "give exactly one of 'ratio' and 'budget_tokens'");
  }
  return request.ratio ? CheckRatio(*request.ratio, "ratio")
                       : CheckBudget(*request.budget_tokens, "budget_tokens");
}

}  // namespace kvd::server
