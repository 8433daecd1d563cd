// Paged GQA attention with log-votes against a dense reference, and the vote identity.
#include "kernels/cpu/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/kv_entries.h"
#include "kernels/cpu/thread_pool.h"

namespace kvd::kernels::cpu {
namespace {

// A pool backed by vectors, with blocks handed out in a shuffled order so tables are not
// contiguous.
class TestPool {
 public:
  TestPool(int32_t num_blocks, int32_t block_size, int32_t head_dim, uint32_t seed)
      : keys_(static_cast<size_t>(num_blocks) * block_size * head_dim),
        values_(keys_.size()),
        votes_(static_cast<size_t>(num_blocks) * block_size) {
    pool_ = KvPool{keys_.data(), values_.data(), votes_.data(), num_blocks, block_size, head_dim};
    for (int32_t b = 0; b < num_blocks; ++b) free_.push_back(b);
    std::shuffle(free_.begin(), free_.end(), std::mt19937(seed));
  }
  const KvPool& pool() const { return pool_; }
  std::vector<int32_t> TakeBlocks(int32_t entries) {
    std::vector<int32_t> table;
    for (int32_t i = 0; i < (entries + pool_.block_size - 1) / pool_.block_size; ++i) {
      table.push_back(free_.back());
      free_.pop_back();
    }
    return table;
  }
  // Writes entry `index` of a table directly.
  void Set(const std::vector<int32_t>& table, int32_t index, const float* key, const float* value,
           float log_vote) {
    const int64_t entry =
        int64_t{table[index / pool_.block_size]} * pool_.block_size + index % pool_.block_size;
    std::copy(key, key + pool_.head_dim, keys_.data() + entry * pool_.head_dim);
    std::copy(value, value + pool_.head_dim, values_.data() + entry * pool_.head_dim);
    votes_[entry] = log_vote;
  }

 private:
  std::vector<float> keys_, values_, votes_;
  KvPool pool_;
  std::vector<int32_t> free_;
};

std::vector<float> RandomVector(size_t size, std::mt19937& random) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> out(size);
  for (float& x : out) x = normal(random);
  return out;
}

// softmax(q·k * scale + log_vote) · v over explicit entries.
std::vector<double> DenseAttention(const float* q, const std::vector<const float*>& keys,
                                   const std::vector<const float*>& values,
                                   const std::vector<float>& log_votes, int32_t head_dim,
                                   float scale) {
  std::vector<double> logits(keys.size());
  double max_logit = -1e300;
  for (size_t j = 0; j < keys.size(); ++j) {
    double dot = 0.0;
    for (int32_t d = 0; d < head_dim; ++d) dot += double{q[d]} * keys[j][d];
    logits[j] = dot * scale + log_votes[j];
    max_logit = std::max(max_logit, logits[j]);
  }
  double total = 0.0;
  std::vector<double> out(head_dim, 0.0);
  for (size_t j = 0; j < keys.size(); ++j) {
    const double w = std::exp(logits[j] - max_logit);
    total += w;
    for (int32_t d = 0; d < head_dim; ++d) out[d] += w * values[j][d];
  }
  for (double& x : out) x /= total;
  return out;
}

// softmax(q·k * scale + log_vote) over explicit keys.
std::vector<double> DenseProbabilities(const float* q, const std::vector<const float*>& keys,
                                       const std::vector<float>& log_votes, int32_t head_dim,
                                       float scale) {
  std::vector<double> p(keys.size());
  double max_logit = -1e300;
  for (size_t j = 0; j < keys.size(); ++j) {
    double dot = 0.0;
    for (int32_t d = 0; d < head_dim; ++d) dot += double{q[d]} * keys[j][d];
    p[j] = dot * scale + log_votes[j];
    max_logit = std::max(max_logit, p[j]);
  }
  double total = 0.0;
  for (double& x : p) total += (x = std::exp(x - max_logit));
  for (double& x : p) x /= total;
  return p;
}

TEST(PagedAttentionTest, EntryWithVoteEqualsThatManyCopies) {
  constexpr int32_t kHeadDim = 16, kBlockSize = 4, kEntries = 7, kVote = 5;
  std::mt19937 random(7);
  TestPool merged_pool(16, kBlockSize, kHeadDim, 1);
  TestPool copies_pool(16, kBlockSize, kHeadDim, 2);
  const auto keys = RandomVector(kEntries * kHeadDim, random);
  const auto values = RandomVector(kEntries * kHeadDim, random);
  // A decode row: one query, one new entry (the last one), cached entries before it.
  auto merged_table = merged_pool.TakeBlocks(kEntries);
  auto copies_table = copies_pool.TakeBlocks(kEntries + kVote - 1);
  int32_t copies_length = 0;
  for (int32_t j = 0; j + 1 < kEntries; ++j) {
    const float* key = keys.data() + j * kHeadDim;
    const float* value = values.data() + j * kHeadDim;
    merged_pool.Set(merged_table, j, key, value, j == 2 ? std::log(float{kVote}) : 0.0f);
    for (int32_t c = 0; c < (j == 2 ? kVote : 1); ++c) {
      copies_pool.Set(copies_table, copies_length++, key, value, 0.0f);
    }
  }
  Tensor k{const_cast<float*>(keys.data() + (kEntries - 1) * kHeadDim), DType::kF32, 1, kHeadDim};
  Tensor v{const_cast<float*>(values.data() + (kEntries - 1) * kHeadDim), DType::kF32, 1, kHeadDim};
  auto q_data = RandomVector(2 * kHeadDim, random);  // two query heads share the kv head
  Tensor q{q_data.data(), DType::kF32, 1, 2 * kHeadDim};
  const AttentionShape shape{2, 1, kHeadDim, 0.25f};
  ThreadPool threads(2);

  std::vector<float> merged_out(2 * kHeadDim), copies_out(2 * kHeadDim);
  const int32_t* merged_tables[] = {merged_table.data()};
  const int32_t merged_lengths[] = {kEntries - 1};
  SequenceKvRef merged_ref{0, 1, merged_tables, merged_lengths};
  AppendKvEntries(k, v, merged_pool.pool(), {&merged_ref, 1});
  PagedAttention(q, merged_pool.pool(), {&merged_ref, 1}, shape,
                 Tensor{merged_out.data(), DType::kF32, 1, 2 * kHeadDim}, threads);

  const int32_t* copies_tables[] = {copies_table.data()};
  const int32_t copies_lengths[] = {copies_length};
  SequenceKvRef copies_ref{0, 1, copies_tables, copies_lengths};
  AppendKvEntries(k, v, copies_pool.pool(), {&copies_ref, 1});
  PagedAttention(q, copies_pool.pool(), {&copies_ref, 1}, shape,
                 Tensor{copies_out.data(), DType::kF32, 1, 2 * kHeadDim}, threads);

  for (int32_t i = 0; i < 2 * kHeadDim; ++i) EXPECT_NEAR(merged_out[i], copies_out[i], 1e-5) << i;
}

TEST(PagedAttentionTest, MatchesDenseReferenceWithPerHeadLengthsAndBatches) {
  constexpr int32_t kHeadDim = 8, kBlockSize = 4, kKvHeads = 2, kGroup = 3;
  constexpr int32_t kHeads = kKvHeads * kGroup;
  std::mt19937 random(11);
  TestPool pool(128, kBlockSize, kHeadDim, 3);
  struct Sequence {
    std::vector<int32_t> cached;  // per kv head, different (0 allowed)
    int32_t new_rows;
  };
  // The last spans chunks of the rows kernel and ends in a chunk of one row.
  const std::vector<Sequence> sequences = {{{0, 5}, 3}, {{9, 2}, 1}, {{4, 0}, 6}, {{3, 7}, 33}};
  int32_t total_rows = 0;
  for (const auto& s : sequences) total_rows += s.new_rows;
  auto q_data = RandomVector(static_cast<size_t>(total_rows) * kHeads * kHeadDim, random);
  auto k_data = RandomVector(static_cast<size_t>(total_rows) * kKvHeads * kHeadDim, random);
  auto v_data = RandomVector(k_data.size(), random);

  // Dense copies of every (sequence, head) entry list, for the reference.
  std::vector<std::vector<std::vector<float>>> dense_keys(sequences.size()),
      dense_values(sequences.size()), dense_votes(sequences.size());
  std::vector<std::vector<std::vector<int32_t>>> tables(sequences.size());
  std::vector<std::vector<const int32_t*>> table_ptrs(sequences.size());
  std::vector<SequenceKvRef> refs;
  std::uniform_real_distribution<float> vote(-1.0f, 2.0f);
  int32_t first_row = 0;
  for (size_t s = 0; s < sequences.size(); ++s) {
    for (int32_t h = 0; h < kKvHeads; ++h) {
      const int32_t cached = sequences[s].cached[h];
      tables[s].push_back(pool.TakeBlocks(cached + sequences[s].new_rows));
      dense_keys[s].push_back(RandomVector(static_cast<size_t>(cached) * kHeadDim, random));
      dense_values[s].push_back(RandomVector(static_cast<size_t>(cached) * kHeadDim, random));
      dense_votes[s].emplace_back();
      for (int32_t j = 0; j < cached; ++j) {
        dense_votes[s][h].push_back(vote(random));
        pool.Set(tables[s][h], j, dense_keys[s][h].data() + j * kHeadDim,
                 dense_values[s][h].data() + j * kHeadDim, dense_votes[s][h][j]);
      }
      table_ptrs[s].push_back(tables[s][h].data());
    }
    refs.push_back({first_row, sequences[s].new_rows, table_ptrs[s], sequences[s].cached});
    first_row += sequences[s].new_rows;
  }
  Tensor q{q_data.data(), DType::kF32, total_rows, kHeads * kHeadDim};
  Tensor k{k_data.data(), DType::kF32, total_rows, kKvHeads * kHeadDim};
  Tensor v{v_data.data(), DType::kF32, total_rows, kKvHeads * kHeadDim};
  std::vector<float> out(q_data.size());
  const AttentionShape shape{kHeads, kKvHeads, kHeadDim, 1.0f / std::sqrt(float{kHeadDim})};
  ThreadPool threads(2);
  AppendKvEntries(k, v, pool.pool(), refs);
  PagedAttention(q, pool.pool(), refs, shape,
                 Tensor{out.data(), DType::kF32, total_rows, kHeads * kHeadDim}, threads);

  for (size_t s = 0; s < sequences.size(); ++s) {
    for (int32_t i = 0; i < sequences[s].new_rows; ++i) {
      const int32_t row = refs[s].first_row + i;
      for (int32_t head = 0; head < kHeads; ++head) {
        const int32_t h = head / kGroup;
        std::vector<const float*> keys, values;
        std::vector<float> votes = dense_votes[s][h];
        for (int32_t j = 0; j < sequences[s].cached[h]; ++j) {
          keys.push_back(dense_keys[s][h].data() + j * kHeadDim);
          values.push_back(dense_values[s][h].data() + j * kHeadDim);
        }
        for (int32_t j = 0; j <= i; ++j) {  // causal over the new rows
          const int32_t new_row = refs[s].first_row + j;
          keys.push_back(k_data.data() + (new_row * kKvHeads + h) * kHeadDim);
          values.push_back(v_data.data() + (new_row * kKvHeads + h) * kHeadDim);
          votes.push_back(0.0f);
        }
        const auto expected = DenseAttention(q_data.data() + (row * kHeads + head) * kHeadDim, keys,
                                             values, votes, kHeadDim, shape.scale);
        for (int32_t d = 0; d < kHeadDim; ++d) {
          EXPECT_NEAR(out[(row * kHeads + head) * kHeadDim + d], expected[d], 1e-5)
              << "sequence " << s << " row " << i << " head " << head;
        }
      }
    }
  }
}

TEST(PagedAttentionTest, ScoresFoldEveryCountedRowAndGroupHeadIntoEachEntry) {
  constexpr int32_t kHeadDim = 8, kBlockSize = 4, kKvHeads = 2, kGroup = 2;
  constexpr int32_t kHeads = kKvHeads * kGroup;
  std::mt19937 random(23);
  TestPool pool(64, kBlockSize, kHeadDim, 5);
  // Sequence 0 takes the max from row 20 on (inside the rows kernel's second chunk of its 35
  // rows), sequence 1 the sum over all rows, sequence 2 collects nothing; cached lengths differ
  // per head, one is zero.
  const std::vector<std::vector<int32_t>> cached = {{6, 3}, {0, 5}, {2, 2}};
  const std::vector<int32_t> new_rows = {35, 3, 2};
  const std::vector<ScoreReduce> reduce = {ScoreReduce::kMax, ScoreReduce::kSum, ScoreReduce::kMax};
  const std::vector<int32_t> first_scored_row = {20, 0, 0};
  constexpr int32_t kStride = 48;
  int32_t total_rows = 0;
  for (int32_t n : new_rows) total_rows += n;
  auto q_data = RandomVector(static_cast<size_t>(total_rows) * kHeads * kHeadDim, random);
  auto k_data = RandomVector(static_cast<size_t>(total_rows) * kKvHeads * kHeadDim, random);
  auto v_data = RandomVector(k_data.size(), random);

  std::vector<std::vector<std::vector<float>>> dense_keys(3), dense_votes(3);
  std::vector<std::vector<std::vector<int32_t>>> tables(3);
  std::vector<std::vector<const int32_t*>> table_ptrs(3);
  // Scores start from earlier steps' values, which the fold must keep or add to.
  std::vector<std::vector<float>> scores(3);
  std::vector<SequenceKvRef> refs;
  std::uniform_real_distribution<float> unit(0.0f, 0.3f);
  int32_t first_row = 0;
  for (size_t s = 0; s < 3; ++s) {
    scores[s].resize(kKvHeads * kStride);
    for (float& x : scores[s]) x = unit(random);
    for (int32_t h = 0; h < kKvHeads; ++h) {
      tables[s].push_back(pool.TakeBlocks(cached[s][h] + new_rows[s]));
      dense_keys[s].push_back(RandomVector(static_cast<size_t>(cached[s][h]) * kHeadDim, random));
      dense_votes[s].emplace_back();
      const auto values = RandomVector(static_cast<size_t>(cached[s][h]) * kHeadDim, random);
      for (int32_t j = 0; j < cached[s][h]; ++j) {
        dense_votes[s][h].push_back(unit(random));
        pool.Set(tables[s][h], j, dense_keys[s][h].data() + j * kHeadDim,
                 values.data() + j * kHeadDim, dense_votes[s][h][j]);
      }
      table_ptrs[s].push_back(tables[s][h].data());
    }
    SequenceKvRef ref{first_row, new_rows[s], table_ptrs[s], cached[s]};
    if (s < 2) ref.scores = {scores[s].data(), kStride, first_scored_row[s], reduce[s]};
    refs.push_back(ref);
    first_row += new_rows[s];
  }
  const std::vector<std::vector<float>> initial = scores;
  Tensor q{q_data.data(), DType::kF32, total_rows, kHeads * kHeadDim};
  Tensor k{k_data.data(), DType::kF32, total_rows, kKvHeads * kHeadDim};
  Tensor v{v_data.data(), DType::kF32, total_rows, kKvHeads * kHeadDim};
  std::vector<float> out(q_data.size());
  const AttentionShape shape{kHeads, kKvHeads, kHeadDim, 1.0f / std::sqrt(float{kHeadDim})};
  ThreadPool threads(2);
  AppendKvEntries(k, v, pool.pool(), refs);
  PagedAttention(q, pool.pool(), refs, shape,
                 Tensor{out.data(), DType::kF32, total_rows, kHeads * kHeadDim}, threads);

  for (size_t s = 0; s < 3; ++s) {
    std::vector<double> expected(initial[s].begin(), initial[s].end());
    for (int32_t i = first_scored_row[s]; i < new_rows[s]; ++i) {
      const int32_t row = refs[s].first_row + i;
      for (int32_t head = 0; head < kHeads; ++head) {
        const int32_t h = head / kGroup;
        std::vector<const float*> keys;
        std::vector<float> votes = dense_votes[s][h];
        for (int32_t j = 0; j < cached[s][h]; ++j) {
          keys.push_back(dense_keys[s][h].data() + j * kHeadDim);
        }
        for (int32_t j = 0; j <= i; ++j) {
          keys.push_back(k_data.data() + ((refs[s].first_row + j) * kKvHeads + h) * kHeadDim);
          votes.push_back(0.0f);
        }
        const auto p = DenseProbabilities(q_data.data() + (row * kHeads + head) * kHeadDim, keys,
                                          votes, kHeadDim, shape.scale);
        for (size_t j = 0; j < p.size(); ++j) {
          double& e = expected[h * kStride + j];
          e = reduce[s] == ScoreReduce::kMax ? std::max(e, p[j]) : e + p[j];
        }
      }
    }
    for (size_t j = 0; j < expected.size(); ++j) {
      // The third sequence collects nothing: its buffer is untouched.
      const double want = s < 2 ? expected[j] : initial[s][j];
      EXPECT_NEAR(scores[s][j], want, 1e-5) << "sequence " << s << " slot " << j;
    }
  }
}

}  // namespace
}  // namespace kvd::kernels::cpu
