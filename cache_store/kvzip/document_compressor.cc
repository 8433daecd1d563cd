#include "cache_store/kvzip/document_compressor.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cache_store/kvzip/recut.h"
#include "cache_store/store/kv_storage.h"

namespace kvd::cache_store {
namespace {

int64_t BlocksFor(int64_t entries, int32_t block_size) {
  return (entries + block_size - 1) / block_size;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DocumentCompressor>> DocumentCompressor::Create(
    const engine::ModelConfig& config, DocumentInput input, const DocumentPrompts& prompts,
    std::vector<int32_t> query_tokens, CompressionSpec spec,
    const std::vector<float>& head_importance) {
  if (auto status = spec.Validate(); !status.ok()) return status;
  if (input.document_ids.empty()) return absl::InvalidArgumentError("the document is empty");
  const int32_t n = static_cast<int32_t>(input.document_ids.size());
  std::vector<ScoringPass> passes;
  if (spec.method == CompressionMethod::kKvzip) {
    if (prompts.chunk_tokens < 1) return absl::InvalidArgumentError("chunks must have tokens");
    for (int32_t begin = 0; begin < n; begin += prompts.chunk_tokens) {
      ScoringPass pass{.begin = begin, .end = std::min(n, begin + prompts.chunk_tokens)};
      pass.tokens = ReconstructionTokens(prompts, input.document_ids, pass.begin, pass.end);
      passes.push_back(std::move(pass));
    }
  } else if (spec.method == CompressionMethod::kSnapKv) {
    if (query_tokens.empty()) return absl::InvalidArgumentError("the snapkv query has no tokens");
    passes.push_back({.tokens = std::move(query_tokens),
                      .begin = 0,
                      .end = n,
                      .shares_document = true,
                      .reduce = kernels::ScoreReduce::kSum});
  }
  const size_t heads = static_cast<size_t>(config.num_layers) * config.num_kv_heads;
  if (spec.method == CompressionMethod::kKvzipHeads && head_importance.size() != heads) {
    return absl::InvalidArgumentError(absl::StrCat("kvzip_heads needs a head profile of ", heads,
                                                   " importances; got ", head_importance.size()));
  }
  auto compressor = std::unique_ptr<DocumentCompressor>(
      new DocumentCompressor(config, std::move(input), std::move(spec), std::move(passes)));
  if (compressor->spec_.method == CompressionMethod::kKvzipHeads) {
    for (size_t h = 0; h < heads; ++h) {
      std::fill(compressor->scores_[h].begin(), compressor->scores_[h].end(), head_importance[h]);
    }
  }
  if (compressor->max_position() > config.max_position_embeddings) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the document's ", compressor->input().length(), " tokens and its scoring prompt reach ",
        "position ", compressor->max_position(), ", beyond the model's context of ",
        config.max_position_embeddings, " tokens"));
  }
  return compressor;
}

DocumentCompressor::DocumentCompressor(const engine::ModelConfig& config, DocumentInput input,
                                       CompressionSpec spec, std::vector<ScoringPass> passes)
    : config_(config),
      input_(std::move(input)),
      spec_(std::move(spec)),
      passes_(std::move(passes)) {
  tokens_ = input_.prefix_ids;
  tokens_.insert(tokens_.end(), input_.document_ids.begin(), input_.document_ids.end());
  total_tokens_ = static_cast<int64_t>(tokens_.size());
  for (const ScoringPass& pass : passes_) total_tokens_ += static_cast<int64_t>(pass.tokens.size());
  const size_t heads = static_cast<size_t>(config_.num_layers) * config_.num_kv_heads;
  scores_.assign(heads, std::vector<float>(input_.document_ids.size(), 0.0f));
  if (spec_.method == CompressionMethod::kStreaming) {
    for (auto& head : scores_) {
      for (size_t p = 0; p < head.size(); ++p) head[p] = static_cast<float>(p + 1);
    }
  }
  if (spec_.method == CompressionMethod::kH2O) {
    prefill_scores_ =
        engine::StepScores{.reduce = kernels::ScoreReduce::kSum, .stride = input_.length()};
    prefill_scores_.values.assign(heads * input_.length(), 0.0f);
  }
}

int64_t DocumentCompressor::HeldBlocks() const {
  int64_t held = document_kv_ != nullptr ? document_kv_->num_blocks() : 0;
  if (pass_kv_ == nullptr) return held;
  // A sharing pass's table starts with the document's own blocks: those are held once.
  for (int32_t layer = 0; layer < config_.num_layers; ++layer) {
    for (int32_t head = 0; head < config_.num_kv_heads; ++head) {
      const std::vector<int32_t>& pass = pass_kv_->blocks(layer, head);
      int64_t shared = 0;
      if (document_kv_ != nullptr) {
        const std::vector<int32_t>& document = document_kv_->blocks(layer, head);
        while (shared < std::ssize(pass) && shared < std::ssize(document) &&
               pass[shared] == document[shared]) {
          ++shared;
        }
      }
      held += std::ssize(pass) - shared;
    }
  }
  return held;
}

int64_t DocumentCompressor::PeakBlocks(int32_t block_size) const {
  const int64_t heads = int64_t{config_.num_layers} * config_.num_kv_heads;
  const int32_t length = input_.length();
  int64_t largest_pass = 0;
  for (const ScoringPass& pass : passes_) {
    const int64_t tokens = static_cast<int64_t>(pass.tokens.size());
    // A sharing pass copies the document's last partial block and appends after it.
    const int64_t blocks =
        pass.shares_document
            ? BlocksFor(length + tokens, block_size) - length / block_size
            : BlocksFor(prefix_length() + (pass.end - pass.begin) + tokens, block_size);
    largest_pass = std::max(largest_pass, blocks);
  }
  return heads * (BlocksFor(length, block_size) + largest_pass);
}

int32_t DocumentCompressor::max_position() const {
  size_t longest = 0;
  for (const ScoringPass& pass : passes_) longest = std::max(longest, pass.tokens.size());
  return input_.length() + static_cast<int32_t>(longest);
}

std::unique_ptr<engine::SequenceKv> DocumentCompressor::NewKv() const {
  return std::make_unique<engine::SequenceKv>(config_.num_layers, config_.num_kv_heads);
}

absl::StatusOr<int32_t> DocumentCompressor::Plan(int32_t token_budget, engine::KvBlockPool& pool,
                                                 std::vector<engine::SequenceStep>& steps) {
  planned_ = 0;
  if (token_budget <= 0 || scored()) return 0;
  if (prefilled_ < input_.length()) {
    if (document_kv_ == nullptr) document_kv_ = NewKv();
    const int32_t count = std::min(token_budget, input_.length() - prefilled_);
    const absl::Status reserved = document_kv_->Reserve(pool, count);
    if (absl::IsResourceExhausted(reserved)) return 0;
    KVD_RETURN_IF_ERROR(reserved);
    steps.push_back({document_kv_.get(), std::span(tokens_).subspan(prefilled_, count),
                     engine::LogitRows::kNone,
                     spec_.method == CompressionMethod::kH2O ? &prefill_scores_ : nullptr});
    planned_ = count;
    return count;
  }
  if (pass_kv_ == nullptr) {
    KVD_ASSIGN_OR_RETURN(const bool started, StartPass(pool));
    if (!started) return 0;
  }
  const ScoringPass& pass = passes_[pass_index_];
  const int32_t count =
      std::min(token_budget, static_cast<int32_t>(pass.tokens.size()) - pass_fed_);
  const absl::Status reserved = pass_kv_->Reserve(pool, count);
  if (absl::IsResourceExhausted(reserved)) return 0;
  KVD_RETURN_IF_ERROR(reserved);
  steps.push_back({pass_kv_.get(), std::span(pass.tokens).subspan(pass_fed_, count),
                   engine::LogitRows::kNone, &pass_scores_});
  planned_ = count;
  return count;
}

absl::StatusOr<bool> DocumentCompressor::StartPass(engine::KvBlockPool& pool) {
  const ScoringPass& pass = passes_[pass_index_];
  const int32_t heads = config_.num_layers * config_.num_kv_heads;
  auto kv = NewKv();
  int32_t visible = input_.length();
  if (pass.shares_document) {
    kv->ShareFrom(*document_kv_, pool);
  } else {
    // The prefix and this chunk only, so the pass costs O(chunk²), not O(chunk · document).
    visible = prefix_length() + (pass.end - pass.begin);
    const std::vector<int32_t> counts(heads, visible);
    if (const absl::Status reserved = kv->ReserveEach(pool, counts); !reserved.ok()) {
      kv->Release(pool);
      if (absl::IsResourceExhausted(reserved)) return false;
      return reserved;
    }
    const int32_t block_size = pool.block_size();
    std::vector<kernels::KvSlot> from, to;
    for (int32_t layer = 0; layer < config_.num_layers; ++layer) {
      for (int32_t head = 0; head < config_.num_kv_heads; ++head) {
        for (int32_t i = 0; i < visible; ++i) {
          const int32_t source = i < prefix_length() ? i : i + pass.begin;
          from.push_back(document_kv_->slot(layer, head, source, block_size));
          to.push_back(kv->slot(layer, head, i, block_size));
        }
      }
    }
    if (absl::Status copied = pool.backend().CopyKvSlots(pool.storage(), from, to); !copied.ok()) {
      kv->Release(pool);
      return copied;
    }
    kv->AdvanceEach(counts);
    kv->set_next_position(input_.length());
  }
  pass_scores_ = engine::StepScores{.reduce = pass.reduce,
                                    .stride = visible + static_cast<int32_t>(pass.tokens.size())};
  pass_scores_.values.assign(static_cast<size_t>(heads) * pass_scores_.stride, 0.0f);
  pass_kv_ = std::move(kv);
  pass_fed_ = 0;
  return true;
}

void DocumentCompressor::Commit(engine::KvBlockPool& pool) {
  if (planned_ == 0) return;
  done_tokens_ += planned_;
  if (prefilled_ < input_.length()) {
    prefilled_ += planned_;
    if (prefilled_ == input_.length() && spec_.method == CompressionMethod::kH2O) {
      for (size_t i = 0; i < scores_.size(); ++i) {
        const float* head = prefill_scores_.values.data() + i * prefill_scores_.stride;
        std::copy(head + prefix_length(), head + input_.length(), scores_[i].begin());
      }
      prefill_scores_.values = {};
    }
  } else {
    pass_fed_ += planned_;
    if (pass_fed_ == static_cast<int32_t>(passes_[pass_index_].tokens.size())) {
      FoldPassScores();
      pass_kv_->Release(pool);
      pass_kv_.reset();
      pass_scores_.values = {};
      ++pass_index_;
    }
  }
  planned_ = 0;
}

void DocumentCompressor::FoldPassScores() {
  const ScoringPass& pass = passes_[pass_index_];
  // Document position p is entry prefix + p of a sharing pass, prefix + (p - begin) otherwise.
  const int32_t offset = prefix_length() - (pass.shares_document ? 0 : pass.begin);
  for (size_t i = 0; i < scores_.size(); ++i) {
    const float* head = pass_scores_.values.data() + i * pass_scores_.stride;
    for (int32_t p = pass.begin; p < pass.end; ++p) {
      scores_[i][p] = std::max(scores_[i][p], head[p + offset]);
    }
  }
}

absl::StatusOr<DocumentPayload> DocumentCompressor::Finish(engine::KvBlockPool& pool) {
  if (!scored() || document_kv_ == nullptr) {
    return absl::FailedPreconditionError("document compression: the scoring is not finished");
  }
  const int64_t heads = int64_t{config_.num_layers} * config_.num_kv_heads;
  const int64_t keep = spec_.KeptEntries(document_length() * heads, heads);
  for (std::vector<float>& head_scores : scores_) {
    for (float& score : head_scores) score = StoredScore(spec_.kv_dtype, score);
  }
  // A merging cut needs every entry read out: the dropped ones fold into the kept ones below.
  const HeadSelection selection =
      SelectEntries(spec_.merge ? CompressionMethod::kNone : spec_.method, scores_, keep);

  DocumentPayload payload;
  payload.num_layers = config_.num_layers;
  payload.num_kv_heads = config_.num_kv_heads;
  payload.head_dim = config_.head_dim;
  payload.original_length = input_.length();
  payload.prefix_text = input_.prefix_text;
  payload.prefix_token_ids = tokens_;
  payload.heads.resize(heads);
  const int32_t block_size = pool.block_size();
  for (int32_t layer = 0; layer < config_.num_layers; ++layer) {
    for (int32_t kv_head = 0; kv_head < config_.num_kv_heads; ++kv_head) {
      const size_t i = static_cast<size_t>(layer) * config_.num_kv_heads + kv_head;
      HeadKv& head = payload.head(layer, kv_head);
      for (int32_t p = 0; p < prefix_length(); ++p) head.positions.push_back(p);
      for (int32_t p : selection[i]) head.positions.push_back(prefix_length() + p);
      std::vector<kernels::KvSlot> slots;
      for (int32_t position : head.positions) {
        slots.push_back(document_kv_->slot(layer, kv_head, position, block_size));
      }
      head.keys.resize(slots.size() * config_.head_dim);
      head.values.resize(head.keys.size());
      head.log_votes.resize(slots.size());
      if (absl::Status read = pool.backend().ReadKvSlots(pool.storage(), slots, head.keys.data(),
                                                         head.values.data(), head.log_votes.data());
          !read.ok()) {
        Release(pool);
        return read;
      }
      // The prefix is always kept: an infinite score keeps it through any re-cut.
      head.scores.assign(prefix_length(), std::numeric_limits<float>::infinity());
      head.scores.insert(head.scores.end(), scores_[i].begin(), scores_[i].end());
    }
  }
  Release(pool);
  if (spec_.merge) {
    absl::StatusOr<DocumentPayload> cut = CutPayload(payload, spec_.method, keep, /*merge=*/true);
    if (!cut.ok()) return cut.status();
    payload = *std::move(cut);
  }
  RoundForStorage(spec_.kv_dtype, payload);
  return payload;
}

void DocumentCompressor::Release(engine::KvBlockPool& pool) {
  for (auto* kv : {&document_kv_, &pass_kv_}) {
    if (*kv != nullptr) {
      (*kv)->Release(pool);
      kv->reset();
    }
  }
}

}  // namespace kvd::cache_store
