// The caches requests are served: a ready document's cache from the memory tier, or read from
// storage (this replica's store, or the shared tier), checked against the identity it must have, cut to the document's ratio when it
// was stored whole, and kept in the tier for the next request. Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "cache_store/kvzip/compression_spec.h"
#include "cache_store/store/cache_identity.h"
#include "cache_store/store/document_meta.h"
#include "cache_store/store/document_payload.h"
#include "documents/document_storage.h"
#include "cache_store/store/document_tier.h"
#include "documents/document_metrics.h"
#include "engine/model_fingerprint.h"
#include "scheduler/request.h"

namespace kvd::documents {

// A ready document as a request uses it.
struct ResolvedDocument {
  scheduler::DocumentPrefix prefix;
  std::string text;  // the document's own text, for placing it in a chat
};

class DocumentResolver {
 public:
  // `storage` and `metrics` outlive the resolver. `template_prefix` is the rendered chat text
  // before any document, which every served cache must start with. `head_profile_digest` is
  // the KVzip head profile's (head_profile.h), "" without one: kvzip_heads caches carry it.
  DocumentResolver(DocumentStorage* storage, DocumentMetrics* metrics,
                   engine::CacheFingerprint fingerprint, std::string kv_dtype,
                   std::string head_profile_digest, std::string template_prefix, size_t tier_bytes);

  // The identity a cache of `method` kept at `ratio` (its dropped entries folded into the kept
  // ones when `merge`) has on this model and pipeline.
  cache_store::CacheIdentity Identity(cache_store::CompressionMethod method, double ratio,
                                      bool merge) const;

  // The cache a request continues for ready document `meta`. FailedPrecondition when it was
  // computed by another model or pipeline or placed by another chat template; DataLoss when
  // the stored cache is corrupt.
  [[nodiscard]] absl::StatusOr<ResolvedDocument> Resolve(const cache_store::DocumentMeta& meta);

  // The stored payload of a ready document (all entries when keep_full).
  [[nodiscard]] absl::StatusOr<cache_store::DocumentPayload> Read(
      const cache_store::DocumentMeta& meta);
  // The payload a request is served: `stored`, cut to meta.ratio when meta.keep_full.
  [[nodiscard]] static absl::StatusOr<cache_store::DocumentPayload> Served(
      const cache_store::DocumentMeta& meta, cache_store::DocumentPayload stored);

  // Keeps `served` in the tier as `meta`'s cache.
  void Keep(const cache_store::DocumentMeta& meta, cache_store::DocumentPayload served);
  void Forget(const std::string& tenant, const std::string& id);

  cache_store::TierStats TierStats() const { return tier_.Stats(); }

 private:
  DocumentStorage* const storage_;
  DocumentMetrics* const metrics_;
  const engine::CacheFingerprint fingerprint_;
  const std::string head_profile_digest_;
  const std::string kv_dtype_;
  const std::string template_prefix_;
  cache_store::DocumentTier tier_;
};

}  // namespace kvd::documents
