// Compresses one document's KV cache as a sequence of forward-step parts that a scheduler
// interleaves with live requests: prefill the prefix and document, score their entries by
// the method's prompts (KVzip: chunked reconstruction), select, and read the kept entries out
// as a DocumentPayload. Thread: the scheduler thread that owns the pool.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "cache_store/kvzip/compression_spec.h"
#include "cache_store/kvzip/document_prompts.h"
#include "cache_store/kvzip/selection.h"
#include "cache_store/store/document_payload.h"
#include "engine/kv_cache.h"
#include "engine/model.h"
#include "engine/model_config.h"

namespace kvd::cache_store {

class DocumentCompressor {
 public:
  // `prompts` are used by kvzip; `query_tokens` (QuestionTokens of the spec's query) by snapkv;
  // `head_importance` (a HeadProfile's, one per layer and kv head) by kvzip_heads, whose every
  // entry it scores with no forward pass beyond the prefill. InvalidArgument for an invalid
  // spec, an empty document, or kvzip_heads without one importance per head.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<DocumentCompressor>> Create(
      const engine::ModelConfig& config, DocumentInput input, const DocumentPrompts& prompts,
      std::vector<int32_t> query_tokens, CompressionSpec spec,
      const std::vector<float>& head_importance = {});

  // Blocks of `block_size` entries the job holds at its peak: the document's cache and the
  // largest scoring cache beside it.
  int64_t PeakBlocks(int32_t block_size) const;
  // Blocks the job holds now: the document's cache and the scoring pass's, each block once
  // (a sharing pass's table holds the document's blocks too).
  int64_t HeldBlocks() const;
  // Positions the longest scoring pass reaches: it must fit the model's context.
  int32_t max_position() const;
  // Tokens of forward work in all, and done so far.
  int64_t total_tokens() const { return total_tokens_; }
  int64_t done_tokens() const { return done_tokens_; }
  // All forward work is done; Finish may be called.
  bool scored() const { return done_tokens_ == total_tokens_; }
  const DocumentInput& input() const { return input_; }
  const CompressionSpec& spec() const { return spec_; }

  // Adds the next part of the work, at most `token_budget` tokens, to `steps` and reserves its
  // blocks. Returns the tokens added: 0 when the work is scored, the budget is 0, or the pool
  // has no blocks for it now (try again after others free some); the backend's error when it
  // failed to copy a scoring pass's entries (the job cannot go on). The part is computed by the
  // next Forward that includes `steps`; call Commit after it succeeds.
  [[nodiscard]] absl::StatusOr<int32_t> Plan(int32_t token_budget, engine::KvBlockPool& pool,
                                             std::vector<engine::SequenceStep>& steps);
  // Records that the planned part ran; folds a finished scoring pass into the scores.
  void Commit(engine::KvBlockPool& pool);
  // Selects the kept entries, reads them out and frees every block. Once scored() only.
  [[nodiscard]] absl::StatusOr<DocumentPayload> Finish(engine::KvBlockPool& pool);
  // Frees every block (cancelled or failed work). Safe to call more than once.
  void Release(engine::KvBlockPool& pool);

 private:
  // One scoring forward pass: `tokens` after a cache that holds the prefix and the document
  // positions [begin, end) (all of them when `shares_document`).
  struct ScoringPass {
    std::vector<int32_t> tokens;
    int32_t begin = 0;
    int32_t end = 0;
    bool shares_document = false;
    kernels::ScoreReduce reduce = kernels::ScoreReduce::kMax;
  };

  DocumentCompressor(const engine::ModelConfig& config, DocumentInput input, CompressionSpec spec,
                     std::vector<ScoringPass> passes);
  int32_t prefix_length() const { return static_cast<int32_t>(input_.prefix_ids.size()); }
  int32_t document_length() const { return static_cast<int32_t>(input_.document_ids.size()); }
  // Builds the current pass's cache: shares the document's blocks, or copies the prefix and
  // the pass's chunk into fresh ones. False when the pool has no blocks for it now; the
  // backend's error when the copy failed.
  [[nodiscard]] absl::StatusOr<bool> StartPass(engine::KvBlockPool& pool);
  void FoldPassScores();
  std::unique_ptr<engine::SequenceKv> NewKv() const;

  const engine::ModelConfig config_;
  const DocumentInput input_;
  const CompressionSpec spec_;
  const std::vector<ScoringPass> passes_;
  std::vector<int32_t> tokens_;  // prefix, then document
  int64_t total_tokens_ = 0;
  int64_t done_tokens_ = 0;

  std::unique_ptr<engine::SequenceKv> document_kv_;
  int32_t prefilled_ = 0;
  engine::StepScores prefill_scores_;  // h2o: attention accumulated during the prefill

  size_t pass_index_ = 0;
  std::unique_ptr<engine::SequenceKv> pass_kv_;
  engine::StepScores pass_scores_;
  int32_t pass_fed_ = 0;

  int32_t planned_ = 0;
  HeadScores scores_;  // per (layer, kv head), per document position
};

}  // namespace kvd::cache_store
