// Stored documents whose caches are loaded in the KV pool, so the requests that name one share
// its blocks instead of each loading a copy. A loaded document stays while blocks allow; idle
// ones (no sequence shares their blocks) are freed least recently used first when blocks run
// short. Thread: scheduler.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/kv_cache.h"
#include "engine/model_config.h"
#include "scheduler/request.h"

namespace kvd::scheduler::internal {

class ResidentDocuments {
 public:
  ResidentDocuments(const engine::ModelConfig& config, engine::KvBlockPool& pool)
      : config_(config), pool_(pool) {}
  ~ResidentDocuments() { Clear(); }

  // Blocks loading `document` would take now: 0 when it is loaded.
  int64_t BlocksToLoad(const DocumentPrefix& document) const;
  // The document's cache in the pool, loaded when absent (idle documents are freed to make
  // room). ResourceExhausted when the pool still lacks the blocks; InvalidArgument when the
  // cache does not fit the model.
  [[nodiscard]] absl::StatusOr<const engine::SequenceKv*> Acquire(const DocumentPrefix& document);
  // Frees idle documents, least recently used first, until `blocks` blocks are free. Returns
  // whether they are.
  bool MakeRoom(int64_t blocks);
  // Blocks MakeRoom could free: those of the loaded documents no sequence shares.
  int64_t IdleBlocks() const;
  // Frees every loaded document (shared blocks live on in the sequences that hold them).
  void Clear();
  int32_t size() const { return static_cast<int32_t>(loaded_.size()); }

 private:
  struct Loaded {
    std::unique_ptr<engine::SequenceKv> kv;
    std::list<std::string>::iterator recency;
  };
  bool Idle(const engine::SequenceKv& kv) const;

  const engine::ModelConfig& config_;
  engine::KvBlockPool& pool_;
  std::map<std::string, Loaded> loaded_;
  std::list<std::string> recency_;  // most recently used first
};

}  // namespace kvd::scheduler::internal
