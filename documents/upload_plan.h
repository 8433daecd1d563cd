// An upload checked against the server's limits and the model, and everything its
// compression needs: the document framed and tokenized, the compressor, the
// fraction it keeps, and the bytes its cache will take (what the quota is charged first).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cache_store/kvzip/compression_spec.h"
#include "cache_store/kvzip/document_compressor.h"
#include "cache_store/kvzip/document_framing.h"
#include "cache_store/kvzip/document_prompts.h"
#include "cache_store/kvzip/head_profile.h"
#include "documents/documents_config.h"
#include "engine/served_model.h"
#include "nlohmann/json.hpp"

namespace kvd::documents {

struct DocumentUpload {
  std::string text;
  cache_store::CompressionSpec compression;
  // Store every entry and cut the served cache from it, so a later re-cut may grow.
  bool keep_full = false;
  std::optional<absl::Duration> ttl;  // unset: documents.default_ttl_seconds
  nlohmann::json metadata = nlohmann::json::object();
};

struct UploadPlan {
  std::unique_ptr<cache_store::DocumentCompressor> compressor;
  int32_t token_count = 0;      // the document in its turn
  double kept_ratio = 1.0;      // of the document's entries, as the upload asked
  int64_t estimated_bytes = 0;  // the stored cache, about
};

// What an upload is planned with besides the model: the document framing, KVzip's prompts and
// the head profile (null: kvzip_heads is refused). Borrowed.
struct UploadPipeline {
  const cache_store::DocumentFraming* framing = nullptr;
  const cache_store::DocumentPrompts* prompts = nullptr;
  const cache_store::HeadProfile* head_profile = nullptr;
};

// Checks `upload` and plans its compression. InvalidArgument naming the param: "text" empty
// or not placeable, "compression" invalid or kvzip_heads without a head profile; with code
// request_too_large when the text passes documents.max_document_bytes.
[[nodiscard]] absl::StatusOr<UploadPlan> PlanUpload(const DocumentUpload& upload,
                                                    const DocumentsConfig& config,
                                                    const engine::ServedModel& model,
                                                    const UploadPipeline& pipeline);

}  // namespace kvd::documents
