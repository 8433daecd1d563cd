// A stored document's cache loaded into the KV pool: the kept entries of each (layer, kv head)
// in their own blocks, the next position at the document's original length. Sequences that
// ask about the document share these blocks (SequenceKv::ShareFrom) and append after them.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "cache_store/store/document_payload.h"
#include "engine/kv_cache.h"
#include "engine/model_config.h"

namespace kvd::cache_store {

// Blocks of `block_size` entries the payload takes in the pool.
int64_t DocumentBlocks(const DocumentPayload& payload, int32_t block_size);

// InvalidArgument when the payload's geometry is not the model's; ResourceExhausted (nothing
// kept) when the pool lacks the blocks.
[[nodiscard]] absl::StatusOr<std::unique_ptr<engine::SequenceKv>> LoadDocumentKv(
    const DocumentPayload& payload, const engine::ModelConfig& config, engine::KvBlockPool& pool);

}  // namespace kvd::cache_store
