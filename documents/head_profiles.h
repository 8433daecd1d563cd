// KVzip head profiles (cache_store/kvzip/head_profile.h) for the documents service: measuring
// one by scoring sample texts through a scheduler of its own (kvd kvzip-profile), and loading
// the configured one at start, checked against the served model.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cache_store/kvzip/document_prompts.h"
#include "cache_store/kvzip/head_profile.h"
#include "engine/model.h"
#include "engine/model_config.h"
#include "engine/model_fingerprint.h"

namespace kvd::documents {

// Frames each of `texts` as a document (`pipeline`), scores it by KVzip with `prompts` and
// averages the heads' highest scores. The same model, pipeline and texts give the same profile.
// InvalidArgument naming the sample (1-based) that is empty, cannot be framed or does not fit
// the model's context; the scheduler's errors.
[[nodiscard]] absl::StatusOr<cache_store::HeadProfile> ProfileHeads(
    engine::Model& model, const cache_store::DocumentPipeline& pipeline,
    const cache_store::DocumentPrompts& prompts, const engine::CacheFingerprint& fingerprint,
    const std::vector<std::string>& texts);

// The profile at `path` ("": none), refused unless made for this model and pipeline:
// InvalidArgument naming documents.head_profile when it is unreadable, malformed, of other
// weights or another shape, or scored under another tokenizer, template, framing or prompts.
[[nodiscard]] absl::StatusOr<std::optional<cache_store::HeadProfile>> LoadHeadProfile(
    const std::string& path, const engine::CacheFingerprint& fingerprint,
    const engine::ModelConfig& config);

}  // namespace kvd::documents
