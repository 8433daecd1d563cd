// What the store knows about a document besides its KV: owner, lifecycle, sizes, the method
// that compressed it and the identity its cache may be reused with. Stored as JSON.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cache_store/store/cache_identity.h"
#include "cache_store/store/document_payload.h"
#include "nlohmann/json.hpp"

namespace kvd::cache_store {

enum class DocumentStatus { kProcessing, kReady, kFailed };

// "processing", "ready", "failed".
std::string DocumentStatusName(DocumentStatus status);

// Where a document's truth lives. kLocal: in this replica's store alone (no shared tier).
// kShared: in the shared tier (remote_document_store.h), which this replica wrote first.
// kCopy: in the shared tier, and this is a copy fetched from it on a miss. A kShared or kCopy
// copy the shared tier no longer holds was deleted or expired there.
enum class DocumentHome { kLocal, kShared, kCopy };

// "local", "shared", "copy".
std::string DocumentHomeName(DocumentHome home);

struct DocumentMeta {
  std::string id;      // from DocumentStore::NewDocumentId()
  std::string tenant;  // owner; every lookup is scoped to it
  DocumentStatus status = DocumentStatus::kProcessing;
  std::string failure_reason;  // why, when status is kFailed
  absl::Time created = absl::UnixEpoch();
  absl::Time expires = absl::InfiniteFuture();  // InfiniteFuture: never expires
  int64_t token_count = 0;                      // tokens of the uncompressed document cache
  int64_t kept_entries = 0;                     // entries kept over all (layer, kv head)
  int64_t stored_bytes = 0;                     // encoded payload size; DocumentStore::Put sets it
  KvStorage storage = KvStorage::kF32;  // the payload's precision; DocumentStore::Put sets it
  // The payload holds every entry and identity.ratio is cut from it on load, so a re-cut may
  // also keep more than before.
  bool keep_full = false;
  // The cut folds dropped entries into kept ones (CompressionSpec::merge), re-cuts too.
  bool merge = false;
  DocumentHome home = DocumentHome::kLocal;
  nlohmann::json metadata = nlohmann::json::object();  // free-form, from the client
  // What the cache was computed with, its compression method and the fraction it keeps
  // included: the one place a document's method and ratio live.
  CacheIdentity identity;

  // InvalidArgument for an empty id or tenant, or a non-object metadata.
  [[nodiscard]] absl::Status Validate() const;

  bool operator==(const DocumentMeta&) const = default;
};

// OK when a cache of `meta` may be reused as `expected`; FailedPrecondition when the document is
// not ready or its identity differs (naming the first differing field).
[[nodiscard]] absl::Status CheckReusable(const DocumentMeta& meta, const CacheIdentity& expected);

// The stored JSON form, with a format version.
std::string EncodeMeta(const DocumentMeta& meta);
// DataLoss when `bytes` is not a meta this build can read.
[[nodiscard]] absl::StatusOr<DocumentMeta> DecodeMeta(const std::string& bytes);

}  // namespace kvd::cache_store
