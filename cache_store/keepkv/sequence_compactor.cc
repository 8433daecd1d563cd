#include "cache_store/keepkv/sequence_compactor.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cache_store/keepkv/entry_merge.h"
#include "cache_store/keepkv/merge_math.h"
#include "cache_store/keepkv/merge_pairs.h"

namespace kvd::cache_store {
namespace {

// Pair-selection passes per compaction; an entry whose best partner was taken waits for the
// next pass, and what still remains after the last is evicted.
constexpr int kMaxMergePasses = 4;
// Probabilities below this count as this when taking logarithms.
constexpr double kMinScore = 1e-30;

// The own entries of one (layer, kv head), read to the host, and where they live.
class HeadEntries {
 public:
  HeadEntries(engine::SequenceKv& kv, engine::KvBlockPool& pool, const HeadState& state,
              const CompactionInput& input)
      : kv_(kv), pool_(pool), state_(state), input_(input), head_dim_(input.head_dim) {
    const int32_t n = size();
    keys_.resize(static_cast<size_t>(n) * head_dim_);
    values_.resize(keys_.size());
    log_votes_.resize(n);
  }

  // Reads the entries from the pool.
  [[nodiscard]] absl::Status Load() {
    std::vector<kernels::KvSlot> slots(size());
    for (int32_t i = 0; i < size(); ++i) slots[i] = Slot(i);
    return pool_.backend().ReadKvSlots(pool_.storage(), slots, keys_.data(), values_.data(),
                                       log_votes_.data());
  }

  int32_t size() const { return static_cast<int32_t>(state_.entries.size()); }
  std::span<const float> keys() const { return keys_; }
  std::span<const float> values() const { return values_; }
  std::span<const float> key(int32_t i) const { return Row(keys_, i); }
  std::span<const float> value(int32_t i) const { return Row(values_, i); }
  float log_vote(int32_t i) const { return log_votes_[i]; }

  kernels::KvSlot Slot(int32_t i) const {
    return kv_.slot(input_.layer, input_.kv_head, state_.base + i, pool_.block_size());
  }
  bool InSharedBlock(int32_t i) const {
    const auto& blocks = kv_.blocks(input_.layer, input_.kv_head);
    return pool_.ref_count(blocks[(state_.base + i) / pool_.block_size()]) > 1;
  }
  // Own entries at the end that lie in blocks of this sequence alone: removing at most this
  // many moves no entry out of, or into, a shared block.
  int32_t PrivateTail() const {
    int32_t count = 0;
    while (count < size() && !InSharedBlock(size() - 1 - count)) ++count;
    return count;
  }

  void Set(int32_t i, const MergedEntry& merged) {
    std::copy(merged.key.begin(), merged.key.end(), keys_.begin() + Offset(i));
    std::copy(merged.value.begin(), merged.value.end(), values_.begin() + Offset(i));
    log_votes_[i] = merged.log_vote;
  }
  // Writes entries `indices` back to the pool.
  [[nodiscard]] absl::Status Write(std::span<const int32_t> indices) {
    std::vector<kernels::KvSlot> slots;
    std::vector<float> keys, values, votes;
    for (int32_t i : indices) {
      slots.push_back(Slot(i));
      keys.insert(keys.end(), key(i).begin(), key(i).end());
      values.insert(values.end(), value(i).begin(), value(i).end());
      votes.push_back(log_votes_[i]);
    }
    return pool_.backend().WriteKvSlots(pool_.storage(), slots, keys.data(), values.data(),
                                        votes.data());
  }
  // Mirrors a removal in the cache: entry `from` now sits at `to`.
  void Move(int32_t from, int32_t to) {
    std::copy_n(keys_.begin() + Offset(from), head_dim_, keys_.begin() + Offset(to));
    std::copy_n(values_.begin() + Offset(from), head_dim_, values_.begin() + Offset(to));
    log_votes_[to] = log_votes_[from];
  }
  void Truncate(int32_t n) {
    keys_.resize(static_cast<size_t>(n) * head_dim_);
    values_.resize(keys_.size());
    log_votes_.resize(n);
  }

 private:
  size_t Offset(int32_t i) const { return static_cast<size_t>(i) * head_dim_; }
  std::span<const float> Row(const std::vector<float>& rows, int32_t i) const {
    return {rows.data() + Offset(i), static_cast<size_t>(head_dim_)};
  }

  engine::SequenceKv& kv_;
  engine::KvBlockPool& pool_;
  const HeadState& state_;
  const CompactionInput& input_;
  const int32_t head_dim_;
  std::vector<float> keys_, values_, log_votes_;
};

// The group's m = rows * group query vectors, [m, head_dim].
std::vector<float> GroupQueries(const CompactionInput& input) {
  std::vector<float> group;
  if (input.rows == 0) return group;
  const size_t row_size = input.queries.size() / input.rows;
  const size_t offset = static_cast<size_t>(input.kv_head) * input.group * input.head_dim;
  for (int32_t r = 0; r < input.rows; ++r) {
    const float* row = input.queries.data() + r * row_size + offset;
    group.insert(group.end(), row, row + static_cast<size_t>(input.group) * input.head_dim);
  }
  return group;
}

class Compaction {
 public:
  Compaction(engine::SequenceKv& kv, engine::KvBlockPool& pool, HeadState& state,
             const KeepKvParams& params, const CompactionInput& input)
      : kv_(kv),
        pool_(pool),
        state_(state),
        params_(params),
        input_(input),
        entries_(kv, pool, state, input),
        queries_(GroupQueries(input)),
        scale_(1.0f / std::sqrt(static_cast<float>(input.head_dim))) {
    if (input.step_scores.empty()) return;
    for (int32_t i = 0; i < entries_.size(); ++i) {
      step_scores_.push_back(input.step_scores[static_cast<size_t>(state.base + i)]);
    }
  }

  absl::StatusOr<CompactionCounts> Run() {
    KVD_RETURN_IF_ERROR(entries_.Load());
    int32_t excess = std::min(entries_.size() - input_.target, entries_.PrivateTail());
    const bool merging = params_.method != MergeMethod::kEvict && !queries_.empty();
    if (merging) {
      switch (params_.selection) {
        case MergeSelection::kLowestScores:
          KVD_RETURN_IF_ERROR(LowestScoredPass(excess));
          return counts_;
        case MergeSelection::kIntoSink:
          // With no sink of its own to write (a shared block holds it), the sequence evicts.
          if (const int32_t sink = SinkEntry(); sink >= 0) {
            KVD_RETURN_IF_ERROR(SinkPass(excess, sink));
            return counts_;
          }
          break;
        case MergeSelection::kSimilarPairs:
          for (int pass = 0; excess > 0 && pass < kMaxMergePasses; ++pass) {
            absl::StatusOr<int32_t> merged = SimilarPairsPass(excess);
            if (!merged.ok()) return merged.status();
            if (*merged == 0) break;
            excess -= *merged;
          }
          break;
      }
    }
    if (excess > 0) KVD_RETURN_IF_ERROR(Evict(excess));
    return counts_;
  }

 private:
  bool Mergeable(int32_t i) const {
    const int32_t position = state_.entries[i].position;
    return position >= input_.first_mergeable && position <= input_.last_mergeable &&
           !entries_.InSharedBlock(i);
  }
  std::vector<uint8_t> MergeableMask() const {
    std::vector<uint8_t> mask(entries_.size());
    for (int32_t i = 0; i < entries_.size(); ++i) mask[i] = Mergeable(i) ? 1 : 0;
    return mask;
  }
  std::vector<float> Ranks() const {
    std::vector<float> ranks;
    for (const EntryState& entry : state_.entries) ranks.push_back(entry.rank);
    return ranks;
  }

  // The entry's logits under the group's queries, moved by the EMA: the logit whose softmax
  // share is the predicted score rather than this step's.
  std::vector<float> Logits(int32_t i) const {
    const int32_t m = static_cast<int32_t>(queries_.size() / input_.head_dim);
    double shift = 0.0;
    if (!step_scores_.empty()) {
      shift = std::log(std::max<double>(state_.entries[i].score, kMinScore)) -
              std::log(std::max(step_scores_[i], kMinScore));
    }
    std::vector<float> logits(m);
    const std::span<const float> key = entries_.key(i);
    for (int32_t j = 0; j < m; ++j) {
      const float* q = queries_.data() + static_cast<size_t>(j) * input_.head_dim;
      double dot = 0.0;
      for (int32_t d = 0; d < input_.head_dim; ++d) dot += double{q[d]} * key[d];
      logits[j] = static_cast<float>(dot * scale_ + shift);
    }
    return logits;
  }

  // Folds `pair.evicted` into `pair.kept`, on the host and in the state (not yet the pool).
  absl::Status Fold(const MergePair& pair) {
    const std::vector<float> logits_e = Logits(pair.evicted);
    const std::vector<float> logits_c = Logits(pair.kept);
    const MergeInput e{entries_.key(pair.evicted), entries_.value(pair.evicted),
                       entries_.log_vote(pair.evicted), logits_e};
    const MergeInput c{entries_.key(pair.kept), entries_.value(pair.kept),
                       entries_.log_vote(pair.kept), logits_c};
    absl::StatusOr<MergedEntry> merged = MergeEntries(params_.method, e, c, {queries_, scale_});
    if (!merged.ok()) return merged.status();
    if (merged->fallback != FallbackReason::kNone) ++counts_.fallbacks;
    entries_.Set(pair.kept, *merged);
    FoldState(pair.evicted, pair.kept, ShareOfEvicted(e, c));
    return absl::OkStatus();
  }

  // Disjoint pairs of the most similar keys; returns how many entries went.
  absl::StatusOr<int32_t> SimilarPairsPass(int32_t excess) {
    const std::vector<MergePair> pairs =
        SelectMergePairs(entries_.keys(), input_.head_dim, MergeableMask(), Ranks(),
                         {.max_pairs = excess, .min_cosine = params_.min_cosine});
    std::vector<int32_t> kept, evicted;
    for (const MergePair& pair : pairs) {
      if (absl::Status s = Fold(pair); !s.ok()) return s;
      kept.push_back(pair.kept);
      evicted.push_back(pair.evicted);
    }
    if (kept.empty()) return 0;
    KVD_RETURN_IF_ERROR(entries_.Write(kept));
    if (absl::Status s = Remove(evicted); !s.ok()) return s;
    counts_.merges += static_cast<int64_t>(evicted.size());
    return static_cast<int32_t>(evicted.size());
  }

  // The `excess` lowest-scored entries, each folded into its most similar remaining entry or,
  // with none similar enough, evicted.
  absl::Status LowestScoredPass(int32_t excess) {
    const std::vector<MergePair> merges = SelectLowestScoredMerges(
        entries_.keys(), entries_.values(), input_.head_dim, MergeableMask(), Ranks(), excess,
        params_.min_cosine, params_.min_value_cosine);
    std::vector<int32_t> kept, removed;
    for (const MergePair& merge : merges) {
      removed.push_back(merge.evicted);
      if (merge.kept < 0) {
        ++counts_.evictions;
        continue;
      }
      if (absl::Status s = Fold(merge); !s.ok()) return s;
      ++counts_.merges;
      if (std::find(kept.begin(), kept.end(), merge.kept) == kept.end()) {
        kept.push_back(merge.kept);
      }
    }
    if (!kept.empty()) KVD_RETURN_IF_ERROR(entries_.Write(kept));
    return removed.empty() ? absl::OkStatus() : Remove(removed);
  }

  // The own entry of the first position, the sink, when it is protected (never itself merged
  // away) and lies in no shared block; else -1.
  int32_t SinkEntry() const {
    if (input_.first_mergeable <= 0) return -1;
    for (int32_t i = 0; i < entries_.size(); ++i) {
      if (state_.entries[i].position == 0) return entries_.InSharedBlock(i) ? -1 : i;
    }
    return -1;
  }

  // The `excess` lowest-ranked entries, all folded into entry `sink`.
  absl::Status SinkPass(int32_t excess, int32_t sink) {
    const std::vector<int32_t> removed = LowestRanked(excess);
    if (removed.empty()) return absl::OkStatus();
    for (int32_t i : removed) KVD_RETURN_IF_ERROR(Fold({.evicted = i, .kept = sink}));
    const int32_t written[] = {sink};
    KVD_RETURN_IF_ERROR(entries_.Write(written));
    counts_.merges += static_cast<int64_t>(removed.size());
    return Remove(removed);
  }

  // The evicted entry's part of the pair's summed weight p * s over the queries.
  static double ShareOfEvicted(const MergeInput& e, const MergeInput& c) {
    const double log_weight_e = e.log_vote + LogSumExp(e.logits);
    const double log_weight_c = c.log_vote + LogSumExp(c.logits);
    return 1.0 / (1.0 + std::exp(log_weight_c - log_weight_e));
  }

  void FoldState(int32_t evicted, int32_t kept, double share_evicted) {
    EntryState& from = state_.entries[evicted];
    EntryState& into = state_.entries[kept];
    into.score += from.score;
    into.rank += from.rank;
    if (!step_scores_.empty()) step_scores_[kept] += step_scores_[evicted];
    into.updates = std::max(into.updates, from.updates);
    // A protected target (the sink) keeps its place, and with it its protection.
    if (into.position >= input_.first_mergeable) {
      into.position = std::max(into.position, from.position);
    }
    into.log_vote = entries_.log_vote(kept);
    if (into.members.empty() && from.members.empty()) return;
    for (TokenShare& member : into.members) {
      member.share = static_cast<float>(member.share * (1.0 - share_evicted));
    }
    for (const TokenShare& member : from.members) {
      into.members.push_back({member.token, static_cast<float>(member.share * share_evicted)});
    }
    from.members.clear();
  }

  // The `count` lowest-ranked mergeable entries (ties to the earlier), in ascending rank.
  std::vector<int32_t> LowestRanked(int32_t count) const {
    std::vector<int32_t> candidates;
    for (int32_t i = 0; i < entries_.size(); ++i) {
      if (Mergeable(i)) candidates.push_back(i);
    }
    count = std::min<int32_t>(count, static_cast<int32_t>(candidates.size()));
    std::partial_sort(candidates.begin(), candidates.begin() + count, candidates.end(),
                      [&](int32_t a, int32_t b) {
                        const float sa = state_.entries[a].rank, sb = state_.entries[b].rank;
                        return sa != sb ? sa < sb : a < b;
                      });
    candidates.resize(count);
    return candidates;
  }

  absl::Status Evict(int32_t count) {
    const std::vector<int32_t> candidates = LowestRanked(count);
    if (candidates.empty()) return absl::OkStatus();
    if (absl::Status s = Remove(candidates); !s.ok()) return s;
    counts_.evictions += static_cast<int64_t>(candidates.size());
    return absl::OkStatus();
  }

  // Removes own entries `indices` from the cache, the host copy and the state alike.
  absl::Status Remove(std::span<const int32_t> indices) {
    std::vector<int32_t> cache_indices;
    for (int32_t i : indices) cache_indices.push_back(state_.base + i);
    absl::StatusOr<std::vector<engine::EntryMove>> moves =
        kv_.RemoveEntries(pool_, input_.layer, input_.kv_head, cache_indices);
    if (!moves.ok()) return moves.status();
    for (const engine::EntryMove& move : *moves) {
      const int32_t from = move.from - state_.base, to = move.to - state_.base;
      entries_.Move(from, to);
      state_.entries[to] = std::move(state_.entries[from]);
      if (!step_scores_.empty()) step_scores_[to] = step_scores_[from];
    }
    const int32_t remaining = entries_.size() - static_cast<int32_t>(indices.size());
    state_.entries.resize(remaining);
    entries_.Truncate(remaining);
    if (!step_scores_.empty()) step_scores_.resize(remaining);
    return absl::OkStatus();
  }

  engine::SequenceKv& kv_;
  engine::KvBlockPool& pool_;
  HeadState& state_;
  const KeepKvParams& params_;
  const CompactionInput& input_;
  HeadEntries entries_;
  const std::vector<float> queries_;
  const float scale_;
  // This step's probability of each own entry (summed over a merge's parts), which with the
  // entry's EMA score gives its logit shift; empty when the step scored nothing.
  std::vector<double> step_scores_;
  CompactionCounts counts_;
};

}  // namespace

absl::StatusOr<CompactionCounts> CompactHead(engine::SequenceKv& kv, engine::KvBlockPool& pool,
                                             HeadState& state, const KeepKvParams& params,
                                             const CompactionInput& input) {
  const int32_t own = kv.length(input.layer, input.kv_head) - state.base;
  if (own != static_cast<int32_t>(state.entries.size())) {
    return absl::InternalError(absl::StrCat("keepkv: layer ", input.layer, " head ", input.kv_head,
                                            " holds ", own, " own entries but its state ",
                                            state.entries.size()));
  }
  if (own <= input.target) return CompactionCounts{};
  return Compaction(kv, pool, state, params, input).Run();
}

}  // namespace kvd::cache_store
