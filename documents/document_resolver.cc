#include "documents/document_resolver.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cache_store/kvzip/entry_folding.h"
#include "cache_store/kvzip/recut.h"

namespace kvd::documents {

using cache_store::CompressionMethod;
using cache_store::DocumentMeta;
using cache_store::DocumentPayload;

DocumentResolver::DocumentResolver(DocumentStorage* storage, DocumentMetrics* metrics,
                                   engine::CacheFingerprint fingerprint, std::string kv_dtype,
                                   std::string head_profile_digest, std::string template_prefix,
                                   size_t tier_bytes)
    : storage_(storage),
      metrics_(metrics),
      fingerprint_(std::move(fingerprint)),
      head_profile_digest_(std::move(head_profile_digest)),
      kv_dtype_(std::move(kv_dtype)),
      template_prefix_(std::move(template_prefix)),
      tier_(tier_bytes) {}

cache_store::CacheIdentity DocumentResolver::Identity(CompressionMethod method, double ratio,
                                                      bool merge) const {
  std::string version = cache_store::CompressionMethodVersion(method);
  if (method == CompressionMethod::kKvzipHeads) {
    absl::StrAppend(&version,
                    " profile=", head_profile_digest_.empty() ? "none" : head_profile_digest_);
  }
  if (merge) absl::StrAppend(&version, " merge=", cache_store::kFoldVersion);
  return cache_store::CacheIdentity{.model_digest = fingerprint_.model_digest,
                                    .tokenizer_digest = fingerprint_.tokenizer_digest,
                                    .kv_dtype = kv_dtype_,
                                    .method = cache_store::CompressionMethodName(method),
                                    .method_version = std::move(version),
                                    .ratio = ratio};
}

absl::StatusOr<DocumentPayload> DocumentResolver::Read(const DocumentMeta& meta) {
  absl::StatusOr<CompressionMethod> method =
      cache_store::ParseCompressionMethod(meta.identity.method);
  if (!method.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("document ", meta.id, " was compressed with method '", meta.identity.method,
                     "', which this server does not know; upload it again"));
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<DocumentPayload> payload =
      storage_->GetPayload(meta.tenant, meta.id, Identity(*method, meta.identity.ratio, meta.merge));
  if (payload.ok()) metrics_->ObserveLoad(absl::ToDoubleSeconds(absl::Now() - start));
  return payload;
}

absl::StatusOr<DocumentPayload> DocumentResolver::Served(const DocumentMeta& meta,
                                                         DocumentPayload stored) {
  absl::StatusOr<CompressionMethod> method =
      cache_store::ParseCompressionMethod(meta.identity.method);
  if (!method.ok()) return method.status();
  if (!meta.keep_full || *method == CompressionMethod::kNone) return stored;
  const int64_t heads = int64_t{stored.num_layers} * stored.num_kv_heads;
  const int64_t keep =
      std::llround(meta.identity.ratio * cache_store::DocumentTokens(stored) * heads);
  return cache_store::CutPayload(stored, *method, keep, meta.merge);
}

void DocumentResolver::Keep(const DocumentMeta& meta, DocumentPayload served) {
  tier_.Put(meta.tenant, meta.id, meta.identity.Fingerprint(),
            std::make_shared<const DocumentPayload>(std::move(served)));
}

void DocumentResolver::Forget(const std::string& tenant, const std::string& id) {
  tier_.Erase(tenant, id);
}

absl::StatusOr<ResolvedDocument> DocumentResolver::Resolve(const DocumentMeta& meta) {
  const std::string fingerprint = meta.identity.Fingerprint();
  std::shared_ptr<const DocumentPayload> payload = tier_.Get(meta.tenant, meta.id, fingerprint);
  if (payload == nullptr) {
    absl::StatusOr<DocumentPayload> stored = Read(meta);
    if (!stored.ok()) return stored.status();
    absl::StatusOr<DocumentPayload> served = Served(meta, *std::move(stored));
    if (!served.ok()) return served.status();
    payload = std::make_shared<const DocumentPayload>(*std::move(served));
    tier_.Put(meta.tenant, meta.id, fingerprint, payload);
  }
  if (!payload->prefix_text.starts_with(template_prefix_)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "document ", meta.id, " was placed by another chat template; upload it again"));
  }
  ResolvedDocument resolved;
  resolved.text = payload->prefix_text.substr(template_prefix_.size());
  resolved.prefix = scheduler::DocumentPrefix{
      absl::StrCat(meta.tenant, "/", meta.id, "/", fingerprint), std::move(payload)};
  return resolved;
}

}  // namespace kvd::documents
