#include "documents/head_profiles.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cache_store/kvzip/document_compressor.h"
#include "engine/kv_cache.h"
#include "scheduler/scheduler.h"

namespace kvd::documents {
namespace {

// Steps `scheduler` until `compressor`'s result is ready.
absl::StatusOr<cache_store::DocumentPayload> Compress(
    scheduler::Scheduler& scheduler, std::unique_ptr<cache_store::DocumentCompressor> compressor) {
  absl::StatusOr<scheduler::CompressionHandle> handle =
      scheduler.SubmitCompression(std::move(compressor));
  if (!handle.ok()) return handle.status();
  for (;;) {
    if (auto result = handle->TakeResult(absl::ZeroDuration())) {
      if (!result->ok()) return result->status();
      return **std::move(result);
    }
    if (!scheduler.HasWork()) return absl::InternalError("the scoring ended without a result");
    if (auto report = scheduler.Step(); !report.ok()) return report.status();
  }
}

absl::Status ProfileError(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("documents.head_profile: ", why));
}

}  // namespace

absl::StatusOr<cache_store::HeadProfile> ProfileHeads(engine::Model& model,
                                                      const cache_store::DocumentPipeline& pipeline,
                                                      const cache_store::DocumentPrompts& prompts,
                                                      const engine::CacheFingerprint& fingerprint,
                                                      const std::vector<std::string>& texts) {
  const engine::ModelConfig& config = model.config();
  std::vector<std::unique_ptr<cache_store::DocumentCompressor>> compressors;
  int64_t sample_tokens = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    absl::StatusOr<cache_store::DocumentInput> input =
        cache_store::PrepareDocument(pipeline, texts[i]);
    absl::StatusOr<std::unique_ptr<cache_store::DocumentCompressor>> compressor =
        input.ok() ? cache_store::DocumentCompressor::Create(
                         config, *input, prompts, /*query_tokens=*/{},
                         {.method = cache_store::CompressionMethod::kKvzip, .ratio = 1.0})
                   : input.status();
    if (!compressor.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("sample ", i + 1, ": ", compressor.status().message()));
    }
    sample_tokens += static_cast<int64_t>(input->document_ids.size());
    compressors.push_back(*std::move(compressor));
  }
  if (compressors.empty()) return absl::InvalidArgumentError("no sample text to profile");

  // Room for the largest sample's scoring and nothing else: the samples run one at a time.
  scheduler::SchedulerConfig scheduler_config;
  int64_t blocks = 0;
  for (const auto& compressor : compressors) {
    blocks = std::max(blocks, compressor->PeakBlocks(scheduler_config.block_size));
  }
  scheduler_config.kv_cache_bytes =
      static_cast<size_t>(blocks) *
      engine::KvBlockPool::BlockBytes(scheduler_config.block_size, config.head_dim,
                                      scheduler_config.kv_cache_dtype);
  absl::StatusOr<std::unique_ptr<scheduler::Scheduler>> scheduler =
      scheduler::Scheduler::Create(model, /*tokenizer=*/nullptr, scheduler_config);
  if (!scheduler.ok()) return scheduler.status();

  std::vector<std::vector<float>> maxima;
  for (auto& compressor : compressors) {
    absl::StatusOr<cache_store::DocumentPayload> scored =
        Compress(**scheduler, std::move(compressor));
    if (!scored.ok()) return scored.status();
    maxima.push_back(cache_store::MaxScorePerHead(*scored));
  }
  return cache_store::AverageHeadMaxima(fingerprint.model_digest, fingerprint.tokenizer_digest,
                                        config.num_layers, config.num_kv_heads, maxima,
                                        sample_tokens);
}

absl::StatusOr<std::optional<cache_store::HeadProfile>> LoadHeadProfile(
    const std::string& path, const engine::CacheFingerprint& fingerprint,
    const engine::ModelConfig& config) {
  if (path.empty()) return std::nullopt;
  // A profile is a few numbers per head; anything far larger is not one.
  constexpr uintmax_t kMaxBytes = uintmax_t{4} << 20;
  std::error_code error;
  const uintmax_t size = std::filesystem::file_size(path, error);
  if (error) return ProfileError(absl::StrCat("cannot read ", path, ": ", error.message()));
  if (size > kMaxBytes) return ProfileError(absl::StrCat(path, " is too large for a profile"));
  std::ifstream file(path, std::ios::binary);
  std::string text(static_cast<size_t>(size), '\0');
  if (!file.read(text.data(), static_cast<std::streamsize>(size))) {
    return ProfileError(absl::StrCat("cannot read ", path));
  }
  absl::StatusOr<cache_store::HeadProfile> profile = cache_store::DecodeHeadProfile(text);
  if (!profile.ok()) return ProfileError(absl::StrCat(path, ": ", profile.status().message()));
  if (profile->model_digest != fingerprint.model_digest ||
      profile->num_layers != config.num_layers || profile->num_kv_heads != config.num_kv_heads) {
    return ProfileError(absl::StrCat(path, " was made for another model (digest ",
                                     profile->model_digest.substr(0, 16), ", this model's ",
                                     fingerprint.model_digest.substr(0, 16),
                                     "); run kvd kvzip-profile for it"));
  }
  if (profile->tokenizer_digest != fingerprint.tokenizer_digest) {
    return ProfileError(
        absl::StrCat(path,
                     " was scored under another tokenizer, chat template or documents framing and "
                     "prompts; run kvd kvzip-profile with this server's config"));
  }
  return profile;
}

}  // namespace kvd::documents
