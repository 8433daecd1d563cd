// KeepKV for one sequence: the scores each of its forward steps collects, the EMA of every
// entry's attention, the full KV kept on host for refreshes, and compaction to the budget once
// the prompt is in and after every decode step. The caller (the scheduler, or a benchmark
// driving the model directly) calls PrepareScores before and AfterStep after each step, and
// Refresh before a step when RefreshDue says so. Thread: the scheduler thread.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "cache_store/keepkv/keepkv_params.h"
#include "cache_store/keepkv/sequence_compactor.h"
#include "engine/kv_cache.h"
#include "engine/model.h"
#include "engine/model_config.h"

namespace kvd::cache_store {

// What compaction and refreshes did in one call.
struct KeepKvCounts {
  int64_t merges = 0;     // entries folded into another
  int64_t evictions = 0;  // entries dropped (no similar partner, or the evict method)
  int64_t fallbacks = 0;  // merges whose exact rule fell back to the weighted mean
  int64_t refreshes = 0;
};

class KeepKvSequence {
 public:
  // `budget`: own entries per (layer, kv head) to keep at most (KeepKvParams::Budget of the
  // prompt's own tokens).
  KeepKvSequence(const engine::ModelConfig& config, const KeepKvParams& params, int32_t budget);

  // Own tokens so far (prompt and generated), and own entries per (layer, kv head) on average.
  int32_t own_tokens() const { return own_tokens_; }
  double mean_entries() const;
  // The state of one (layer, kv head): its own entries, their scores and (with refreshes)
  // their tokens.
  const HeadState& head(int32_t layer, int32_t kv_head) const {
    return heads_[HeadIndex(layer, kv_head)];
  }

  // Before a step that computes `new_tokens` tokens of the sequence (`completes`: they reach
  // the end of its tokens, so the prompt is in): sets `scores` up and returns true when the
  // step must collect them, false when it needs none (a prompt chunk before the last).
  bool PrepareScores(const engine::SequenceKv& kv, int32_t new_tokens, bool completes,
                     engine::StepScores& scores);
  // After that step: records the new entries, updates the EMA from `scores` (null when
  // PrepareScores returned false), and compacts to the budget once the prompt is in.
  [[nodiscard]] absl::StatusOr<KeepKvCounts> AfterStep(engine::SequenceKv& kv,
                                                       engine::KvBlockPool& pool,
                                                       int32_t new_tokens, bool completes,
                                                       const engine::StepScores* scores);

  // Whether the refresh period has come (every refresh_every decode steps).
  bool RefreshDue() const;
  // Rebuilds the own entries from the full copy (votes reset, each token its own entry, scores
  // credited from the entries it was merged into); the next step's AfterStep compacts again
  // with that step's exact scores. ResourceExhausted, changing nothing, when the pool lacks the
  // blocks for the full length.
  [[nodiscard]] absl::Status Refresh(engine::SequenceKv& kv, engine::KvBlockPool& pool);
  // Blocks the refresh would take beyond what the own entries hold now.
  int64_t RefreshBlocks(const engine::SequenceKv& kv, const engine::KvBlockPool& pool) const;

 private:
  size_t HeadIndex(int32_t layer, int32_t kv_head) const {
    return static_cast<size_t>(layer) * config_.num_kv_heads + kv_head;
  }
  void Attach(const engine::SequenceKv& kv);
  [[nodiscard]] absl::Status AppendEntries(const engine::SequenceKv& kv, engine::KvBlockPool& pool,
                                           int32_t count);
  void UpdateScores(int32_t new_tokens, const engine::StepScores& scores);
  // Whether a step of `new_tokens` takes some head over the budget, so that it compacts.
  bool CompactsAfter(int32_t new_tokens) const;
  absl::StatusOr<KeepKvCounts> Compact(engine::SequenceKv& kv, engine::KvBlockPool& pool,
                                       const engine::StepScores* scores, int32_t new_tokens);

  engine::ModelConfig config_;
  KeepKvParams params_;
  int32_t budget_;
  bool attached_ = false;
  int32_t own_start_ = 0;  // position of the first own token
  int32_t own_tokens_ = 0;
  bool prompt_done_ = false;
  int64_t decode_steps_ = 0;
  int64_t last_refresh_step_ = 0;
  std::vector<HeadState> heads_;  // [num_layers * num_kv_heads], layer-major
  // With refreshes: every own token's key and value per (layer, kv head), [tokens, head_dim].
  std::vector<std::vector<float>> full_keys_, full_values_;
};

}  // namespace kvd::cache_store
