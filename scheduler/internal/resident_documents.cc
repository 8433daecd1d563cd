#include "scheduler/internal/resident_documents.h"

#include "base/check.h"
#include "cache_store/kvzip/document_kv.h"

namespace kvd::scheduler::internal {

int64_t ResidentDocuments::BlocksToLoad(const DocumentPrefix& document) const {
  if (loaded_.count(document.key) > 0) return 0;
  return cache_store::DocumentBlocks(*document.payload, pool_.block_size());
}

absl::StatusOr<const engine::SequenceKv*> ResidentDocuments::Acquire(
    const DocumentPrefix& document) {
  if (auto it = loaded_.find(document.key); it != loaded_.end()) {
    recency_.splice(recency_.begin(), recency_, it->second.recency);
    return it->second.kv.get();
  }
  MakeRoom(BlocksToLoad(document));
  auto kv = cache_store::LoadDocumentKv(*document.payload, config_, pool_);
  if (!kv.ok()) return kv.status();
  recency_.push_front(document.key);
  Loaded& loaded = loaded_[document.key];
  loaded.kv = *std::move(kv);
  loaded.recency = recency_.begin();
  return loaded.kv.get();
}

bool ResidentDocuments::Idle(const engine::SequenceKv& kv) const {
  for (int32_t layer = 0; layer < kv.num_layers(); ++layer) {
    for (int32_t head = 0; head < kv.num_kv_heads(); ++head) {
      for (int32_t block : kv.blocks(layer, head)) {
        if (pool_.ref_count(block) > 1) return false;
      }
    }
  }
  return true;
}

int64_t ResidentDocuments::IdleBlocks() const {
  int64_t blocks = 0;
  for (const auto& [key, loaded] : loaded_) {
    if (Idle(*loaded.kv)) blocks += loaded.kv->num_blocks();
  }
  return blocks;
}

bool ResidentDocuments::MakeRoom(int64_t blocks) {
  for (auto it = recency_.rbegin(); it != recency_.rend() && pool_.num_free_blocks() < blocks;) {
    auto loaded = loaded_.find(*it);
    KVD_CHECK(loaded != loaded_.end());
    if (!Idle(*loaded->second.kv)) {
      ++it;
      continue;
    }
    loaded->second.kv->Release(pool_);
    loaded_.erase(loaded);
    it = std::make_reverse_iterator(recency_.erase(std::next(it).base()));
  }
  return pool_.num_free_blocks() >= blocks;
}

void ResidentDocuments::Clear() {
  for (auto& [key, loaded] : loaded_) loaded.kv->Release(pool_);
  loaded_.clear();
  recency_.clear();
}

}  // namespace kvd::scheduler::internal
