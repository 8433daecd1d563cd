#include "cache_store/kvzip/document_kv.h"

#include <vector>

#include "absl/strings/str_cat.h"

namespace kvd::cache_store {

int64_t DocumentBlocks(const DocumentPayload& payload, int32_t block_size) {
  int64_t blocks = 0;
  for (const HeadKv& head : payload.heads) blocks += (head.kept() + block_size - 1) / block_size;
  return blocks;
}

absl::StatusOr<std::unique_ptr<engine::SequenceKv>> LoadDocumentKv(
    const DocumentPayload& payload, const engine::ModelConfig& config, engine::KvBlockPool& pool) {
  if (payload.num_layers != config.num_layers || payload.num_kv_heads != config.num_kv_heads ||
      payload.head_dim != config.head_dim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the document's cache has ", payload.num_layers, " layers of ", payload.num_kv_heads,
        " kv heads of ", payload.head_dim, " dimensions; the model has ", config.num_layers, ", ",
        config.num_kv_heads, " and ", config.head_dim));
  }
  auto kv = std::make_unique<engine::SequenceKv>(config.num_layers, config.num_kv_heads);
  std::vector<int32_t> counts;
  for (const HeadKv& head : payload.heads) counts.push_back(head.kept());
  if (auto status = kv->ReserveEach(pool, counts); !status.ok()) {
    kv->Release(pool);
    return status;
  }
  const int32_t block_size = pool.block_size();
  for (int32_t layer = 0; layer < config.num_layers; ++layer) {
    for (int32_t kv_head = 0; kv_head < config.num_kv_heads; ++kv_head) {
      const HeadKv& head = payload.head(layer, kv_head);
      std::vector<kernels::KvSlot> slots(head.kept());
      for (int32_t i = 0; i < head.kept(); ++i) slots[i] = kv->slot(layer, kv_head, i, block_size);
      if (absl::Status written = pool.backend().WriteKvSlots(
              pool.storage(), slots, head.keys.data(), head.values.data(), head.log_votes.data());
          !written.ok()) {
        kv->Release(pool);
        return written;
      }
    }
  }
  kv->AdvanceEach(counts);
  kv->set_next_position(payload.original_length);
  return kv;
}

}  // namespace kvd::cache_store
