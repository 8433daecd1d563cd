#include "documents/upload_plan.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_details.h"

namespace kvd::documents {
namespace {

// Bytes a payload of `entries` kept entries and `scores` scores encodes to in `storage`,
// roughly (a compact position counted as two bytes; a compact payload scores its kept entries
// alone): what a quota is checked against before the compression runs.
int64_t EstimateBytes(int64_t entries, int64_t scores, int32_t head_dim,
                      cache_store::KvStorage storage) {
  switch (storage) {
    case cache_store::KvStorage::kF32:
      return entries * (2 * int64_t{head_dim} * 4 + 8) + scores * 4;
    case cache_store::KvStorage::kBf16:
      return entries * (2 * int64_t{head_dim} * 2 + 6);
    case cache_store::KvStorage::kInt8:
      return entries * (2 * (int64_t{head_dim} + 2) + 6);
  }
  return 0;
}

}  // namespace

absl::StatusOr<UploadPlan> PlanUpload(const DocumentUpload& upload, const DocumentsConfig& config,
                                      const engine::ServedModel& model,
                                      const UploadPipeline& pipeline) {
  if (upload.text.empty()) {
    return WithParam(absl::InvalidArgumentError("'text' must be a non-empty string"), "text");
  }
  if (upload.text.size() > config.max_document_bytes) {
    return WithParam(
        WithErrorCode(absl::InvalidArgumentError(absl::StrCat(
                          "the document has ", upload.text.size(),
                          " bytes; this server accepts at most ", config.max_document_bytes)),
                      "request_too_large"),
        "text");
  }
  if (auto status = upload.compression.Validate(); !status.ok()) {
    return WithParam(status, "compression");
  }
  const bool by_heads = upload.compression.method == cache_store::CompressionMethod::kKvzipHeads;
  if (by_heads && pipeline.head_profile == nullptr) {
    return WithParam(absl::InvalidArgumentError(
                         "compression method kvzip_heads needs a KVzip head profile of this "
                         "model, and this server has none (documents.head_profile, made by kvd "
                         "kvzip-profile)"),
                     "compression");
  }
  const cache_store::DocumentPrompts& prompts = *pipeline.prompts;
  absl::StatusOr<cache_store::DocumentInput> input = cache_store::PrepareDocument(
      {pipeline.framing, model.chat_template, model.tokenizer}, upload.text);
  if (!input.ok()) return WithParam(input.status(), "text");
  std::vector<int32_t> query;
  if (!upload.compression.query.empty()) {
    query = cache_store::QuestionTokens(*model.tokenizer, prompts, upload.compression.query);
  }
  const cache_store::CompressionSpec& asked = upload.compression;
  cache_store::CompressionSpec run = asked;
  if (upload.keep_full && run.method != cache_store::CompressionMethod::kNone) {
    run.ratio = 1.0;
    run.budget_tokens.reset();
  }
  const engine::ModelConfig& shape = *model.config;
  const int64_t heads = int64_t{shape.num_layers} * shape.num_kv_heads;
  const int64_t document_entries = static_cast<int64_t>(input->document_ids.size()) * heads;
  const int64_t stored_entries = static_cast<int64_t>(input->prefix_ids.size()) * heads +
                                 run.KeptEntries(document_entries, heads);
  UploadPlan plan;
  plan.token_count = input->length();
  plan.kept_ratio = static_cast<double>(asked.KeptEntries(document_entries, heads)) /
                    static_cast<double>(document_entries);
  plan.estimated_bytes =
      EstimateBytes(stored_entries, int64_t{input->length()} * heads, shape.head_dim, run.kv_dtype);
  auto compressor = cache_store::DocumentCompressor::Create(
      shape, *input, prompts, std::move(query), run,
      by_heads ? pipeline.head_profile->importance : std::vector<float>{});
  if (!compressor.ok()) return WithParam(compressor.status(), "text");
  plan.compressor = *std::move(compressor);
  return plan;
}

}  // namespace kvd::documents
