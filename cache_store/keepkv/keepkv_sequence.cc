#include "cache_store/keepkv/keepkv_sequence.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "base/status_macros.h"
#include "cache_store/kvzip/selection.h"

namespace kvd::cache_store {

KeepKvSequence::KeepKvSequence(const engine::ModelConfig& config, const KeepKvParams& params,
                               int32_t budget)
    : config_(config),
      params_(params),
      budget_(std::max(budget, 1)),
      heads_(static_cast<size_t>(config.num_layers) * config.num_kv_heads) {
  if (params_.refresh_every > 0) {
    full_keys_.resize(heads_.size());
    full_values_.resize(heads_.size());
  }
}

double KeepKvSequence::mean_entries() const {
  size_t total = 0;
  for (const HeadState& head : heads_) total += head.entries.size();
  return heads_.empty() ? 0.0 : static_cast<double>(total) / heads_.size();
}

void KeepKvSequence::Attach(const engine::SequenceKv& kv) {
  attached_ = true;
  own_start_ = kv.next_position();
  for (int32_t layer = 0; layer < config_.num_layers; ++layer) {
    for (int32_t head = 0; head < config_.num_kv_heads; ++head) {
      heads_[HeadIndex(layer, head)].base = kv.length(layer, head);
    }
  }
}

bool KeepKvSequence::PrepareScores(const engine::SequenceKv& kv, int32_t new_tokens, bool completes,
                                   engine::StepScores& scores) {
  if (!attached_) Attach(kv);
  if (!completes || new_tokens <= 0) return false;
  int32_t longest = 0;
  for (int32_t layer = 0; layer < config_.num_layers; ++layer) {
    for (int32_t length : kv.layer_lengths(layer)) longest = std::max(longest, length);
  }
  scores.reduce = kernels::ScoreReduce::kSum;
  // The prompt is scored by its last `window` queries; a decode step by its one query.
  scores.first_row = prompt_done_ ? 0 : std::max(0, new_tokens - params_.window);
  scores.stride = longest + new_tokens;
  scores.values.assign(heads_.size() * static_cast<size_t>(scores.stride), 0.0f);
  // The queries serve only the merges of a compaction, which runs after a step that takes a
  // head over the budget: most decode steps need none (and on a GPU, copy none).
  scores.collect_queries = CompactsAfter(new_tokens);
  return true;
}

bool KeepKvSequence::CompactsAfter(int32_t new_tokens) const {
  return std::any_of(heads_.begin(), heads_.end(), [&](const HeadState& state) {
    return static_cast<int64_t>(state.entries.size()) + new_tokens > budget_;
  });
}

absl::StatusOr<KeepKvCounts> KeepKvSequence::AfterStep(engine::SequenceKv& kv,
                                                       engine::KvBlockPool& pool,
                                                       int32_t new_tokens, bool completes,
                                                       const engine::StepScores* scores) {
  if (!attached_) return absl::FailedPreconditionError("keepkv: step without PrepareScores");
  KVD_RETURN_IF_ERROR(AppendEntries(kv, pool, new_tokens));
  if (scores != nullptr) UpdateScores(new_tokens, *scores);
  if (!completes) return KeepKvCounts{};
  if (prompt_done_) ++decode_steps_;
  prompt_done_ = true;
  return Compact(kv, pool, scores, new_tokens);
}

absl::Status KeepKvSequence::AppendEntries(const engine::SequenceKv& kv, engine::KvBlockPool& pool,
                                           int32_t count) {
  const int32_t first_position = kv.next_position() - count;
  for (int32_t layer = 0; layer < config_.num_layers; ++layer) {
    for (int32_t head = 0; head < config_.num_kv_heads; ++head) {
      HeadState& state = heads_[HeadIndex(layer, head)];
      for (int32_t i = 0; i < count; ++i) {
        EntryState entry;
        entry.position = first_position + i;
        if (params_.refresh_every > 0) entry.members.push_back({entry.position - own_start_, 1});
        state.entries.push_back(std::move(entry));
      }
      if (params_.refresh_every == 0 || count == 0) continue;
      // New entries are appended at the end of the head.
      const int32_t length = kv.length(layer, head);
      std::vector<kernels::KvSlot> slots;
      for (int32_t index = length - count; index < length; ++index) {
        slots.push_back(kv.slot(layer, head, index, pool.block_size()));
      }
      std::vector<float>& keys = full_keys_[HeadIndex(layer, head)];
      std::vector<float>& values = full_values_[HeadIndex(layer, head)];
      const size_t offset = keys.size();
      keys.resize(offset + static_cast<size_t>(count) * config_.head_dim);
      values.resize(keys.size());
      std::vector<float> votes(count);
      KVD_RETURN_IF_ERROR(pool.backend().ReadKvSlots(pool.storage(), slots, keys.data() + offset,
                                                     values.data() + offset, votes.data()));
    }
  }
  own_tokens_ += count;
  return absl::OkStatus();
}

void KeepKvSequence::UpdateScores(int32_t new_tokens, const engine::StepScores& scores) {
  const int32_t group = config_.num_heads / config_.num_kv_heads;
  const double queries = static_cast<double>(new_tokens - scores.first_row) * group;
  if (queries <= 0) return;
  const double alpha = params_.alpha;
  std::vector<float> step;
  for (int32_t layer = 0; layer < config_.num_layers; ++layer) {
    for (int32_t head = 0; head < config_.num_kv_heads; ++head) {
      HeadState& state = heads_[HeadIndex(layer, head)];
      step.resize(state.entries.size());
      for (size_t i = 0; i < state.entries.size(); ++i) {
        step[i] = static_cast<float>(
            scores.at(layer, head, config_.num_kv_heads, state.base + static_cast<int32_t>(i)) /
            queries);
      }
      // The prompt's entries are still in position order: ranked by their scores pooled over
      // neighbours.
      const bool pooled = !prompt_done_ && params_.pool > 1;
      const std::vector<float> ranks = pooled ? MaxPool(step, params_.pool) : std::vector<float>();
      for (size_t i = 0; i < state.entries.size(); ++i) {
        EntryState& entry = state.entries[i];
        // Bias-corrected EMA: S_n = alpha S_{n-1} + (1 - alpha) s_n, reported as
        // S_n / (1 - alpha^n), so that a new entry's first score is taken as it is.
        const double kept = 1.0 - std::pow(alpha, entry.updates);
        const double next = 1.0 - std::pow(alpha, entry.updates + 1);
        entry.score =
            static_cast<float>((alpha * kept * entry.score + (1.0 - alpha) * step[i]) / next);
        ++entry.updates;
        entry.rank = pooled ? ranks[i] : entry.score;
      }
    }
  }
}

absl::StatusOr<KeepKvCounts> KeepKvSequence::Compact(engine::SequenceKv& kv,
                                                     engine::KvBlockPool& pool,
                                                     const engine::StepScores* scores,
                                                     int32_t new_tokens) {
  KeepKvCounts counts;
  // Compact to a little under the budget, so that the next pass comes only after a few
  // decode steps and its O(n^2) pair search is paid once per `slack` steps.
  const int32_t slack = std::max(1, budget_ / 16);
  const int32_t group = config_.num_heads / config_.num_kv_heads;
  const int32_t rows = scores == nullptr ? 0 : new_tokens - scores->first_row;
  const size_t layer_queries = static_cast<size_t>(rows) * config_.num_heads * config_.head_dim;
  std::vector<float> step_scores;
  for (int32_t layer = 0; layer < config_.num_layers; ++layer) {
    for (int32_t head = 0; head < config_.num_kv_heads; ++head) {
      HeadState& state = heads_[HeadIndex(layer, head)];
      if (static_cast<int32_t>(state.entries.size()) <= budget_) continue;
      CompactionInput input;
      input.layer = layer;
      input.kv_head = head;
      input.target = std::max(1, budget_ - slack);
      input.first_mergeable = std::max(params_.sink, own_start_ + params_.protected_prefix);
      input.last_mergeable = kv.next_position() - 1 - params_.recent;
      input.group = group;
      input.head_dim = config_.head_dim;
      if (scores != nullptr && !scores->queries.empty()) {
        input.rows = rows;
        input.queries = {scores->queries.data() + layer * layer_queries, layer_queries};
        const double queries = static_cast<double>(rows) * group;
        step_scores.assign(kv.length(layer, head), 0.0f);
        for (int32_t i = 0; i < kv.length(layer, head); ++i) {
          step_scores[i] =
              static_cast<float>(scores->at(layer, head, config_.num_kv_heads, i) / queries);
        }
        input.step_scores = step_scores;
      }
      absl::StatusOr<CompactionCounts> done = CompactHead(kv, pool, state, params_, input);
      if (!done.ok()) return done.status();
      counts.merges += done->merges;
      counts.evictions += done->evictions;
      counts.fallbacks += done->fallbacks;
    }
  }
  return counts;
}

bool KeepKvSequence::RefreshDue() const {
  return params_.refresh_every > 0 && prompt_done_ && decode_steps_ > last_refresh_step_ &&
         decode_steps_ % params_.refresh_every == 0;
}

int64_t KeepKvSequence::RefreshBlocks(const engine::SequenceKv& kv,
                                      const engine::KvBlockPool& pool) const {
  const int64_t block_size = pool.block_size();
  int64_t blocks = 0;
  for (int32_t layer = 0; layer < config_.num_layers; ++layer) {
    for (int32_t head = 0; head < config_.num_kv_heads; ++head) {
      const int64_t base = heads_[HeadIndex(layer, head)].base;
      const int64_t full = (base + own_tokens_ + block_size - 1) / block_size;
      const int64_t now = (kv.length(layer, head) + block_size - 1) / block_size;
      // One more for a private copy of a shared last block.
      blocks += std::max<int64_t>(0, full - now) + 1;
    }
  }
  return blocks;
}

absl::Status KeepKvSequence::Refresh(engine::SequenceKv& kv, engine::KvBlockPool& pool) {
  if (params_.refresh_every == 0) {
    return absl::FailedPreconditionError("keepkv: refreshes are off for this sequence");
  }
  if (RefreshBlocks(kv, pool) > pool.num_free_blocks()) {
    return absl::ResourceExhaustedError("keepkv: no room to refresh from the full KV");
  }
  last_refresh_step_ = decode_steps_;
  std::vector<int32_t> counts(heads_.size(), own_tokens_);
  for (int32_t layer = 0; layer < config_.num_layers; ++layer) {
    for (int32_t head = 0; head < config_.num_kv_heads; ++head) {
      HeadState& state = heads_[HeadIndex(layer, head)];
      // Every token is credited with its share of its entry's predicted attention.
      std::vector<EntryState> tokens(own_tokens_);
      for (int32_t t = 0; t < own_tokens_; ++t) {
        tokens[t].position = own_start_ + t;
        tokens[t].members.push_back({t, 1.0f});
      }
      for (const EntryState& entry : state.entries) {
        for (const TokenShare& member : entry.members) {
          tokens[member.token].score = entry.score * member.share;
          tokens[member.token].rank = tokens[member.token].score;
          tokens[member.token].updates = entry.updates;
        }
      }
      // Drop the own entries (the tail of the head: nothing moves), then write the full copy.
      std::vector<int32_t> own;
      for (int32_t i = 0; i < static_cast<int32_t>(state.entries.size()); ++i) {
        own.push_back(state.base + i);
      }
      if (absl::StatusOr<std::vector<engine::EntryMove>> removed =
              kv.RemoveEntries(pool, layer, head, own);
          !removed.ok()) {
        return removed.status();
      }
      state.entries = std::move(tokens);
    }
  }
  if (absl::Status s = kv.ReserveEach(pool, counts); !s.ok()) return s;
  kv.AdvanceEach(counts);
  const std::vector<float> votes(own_tokens_, 0.0f);
  for (int32_t layer = 0; layer < config_.num_layers; ++layer) {
    for (int32_t head = 0; head < config_.num_kv_heads; ++head) {
      const size_t index = HeadIndex(layer, head);
      std::vector<kernels::KvSlot> slots;
      for (int32_t t = 0; t < own_tokens_; ++t) {
        slots.push_back(kv.slot(layer, head, heads_[index].base + t, pool.block_size()));
      }
      KVD_RETURN_IF_ERROR(pool.backend().WriteKvSlots(pool.storage(), slots,
                                                      full_keys_[index].data(),
                                                      full_values_[index].data(), votes.data()));
    }
  }
  return absl::OkStatus();
}

}  // namespace kvd::cache_store
