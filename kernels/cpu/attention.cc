#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace kvd::kernels::cpu {
namespace {

// Address of entry `index` of one (layer, kv head) whose blocks are listed in `block_table`.
inline int64_t EntryOffset(const KvPool& pool, const int32_t* block_table, int32_t index) {
  return static_cast<int64_t>(block_table[index / pool.block_size]) * pool.block_size +
         index % pool.block_size;
}

// Below this many multiply-adds a step's attention runs on the calling thread alone: waking
// workers costs more than it saves.
constexpr int64_t kMinParallelWork = 1 << 16;

// Rows [row_begin, row_end) of one sequence's new rows at one kv head. A sequence that collects
// scores has one task per kv head for all its rows, so no two threads fold into one score.
struct RowTask {
  int32_t sequence;
  int32_t row_begin;
  int32_t row_end;
  int32_t kv_head;
};

void FoldScore(const AttentionScoresRef& scores, int32_t kv_head, int32_t entry, float p) {
  float& score = scores.scores[static_cast<int64_t>(kv_head) * scores.stride + entry];
  score = scores.reduce == ScoreReduce::kMax ? std::max(score, p) : score + p;
}

}  // namespace

void AppendKvEntries(const Tensor& k, const Tensor& v, const KvPool& pool,
                     std::span<const SequenceKvRef> sequences) {
  const int32_t head_dim = pool.head_dim;
  const size_t head_bytes = static_cast<size_t>(head_dim) * sizeof(float);
  for (const SequenceKvRef& seq : sequences) {
    const int32_t num_kv_heads = static_cast<int32_t>(seq.block_tables.size());
    for (int32_t h = 0; h < num_kv_heads; ++h) {
      for (int32_t i = 0; i < seq.num_rows; ++i) {
        const int64_t entry = EntryOffset(pool, seq.block_tables[h], seq.cached_lengths[h] + i);
        const int64_t src = (static_cast<int64_t>(seq.first_row) + i) * k.cols + h * head_dim;
        std::memcpy(pool.keys + entry * head_dim, k.f32() + src, head_bytes);
        std::memcpy(pool.values + entry * head_dim, v.f32() + src, head_bytes);
        pool.log_votes[entry] = 0.0f;
      }
    }
  }
}

void PagedAttention(const Tensor& q, const KvPool& pool, std::span<const SequenceKvRef> sequences,
                    const AttentionShape& shape, Tensor out, ThreadPool& threads) {
  const int32_t group = shape.num_heads / shape.num_kv_heads;
  const int32_t head_dim = shape.head_dim;
  std::vector<RowTask> tasks;
  int64_t work = 0;  // multiply-adds, to decide whether threads pay for their hand-off
  for (int32_t s = 0; s < static_cast<int32_t>(sequences.size()); ++s) {
    const SequenceKvRef& seq = sequences[s];
    for (int32_t h = 0; h < shape.num_kv_heads; ++h) {
      work += (int64_t{seq.cached_lengths[h]} * seq.num_rows +
               int64_t{seq.num_rows} * (seq.num_rows + 1) / 2) *
              group * head_dim * 2;
      if (seq.scores.scores != nullptr) {
        tasks.push_back({s, 0, seq.num_rows, h});
      } else {
        for (int32_t row = 0; row < seq.num_rows; ++row) tasks.push_back({s, row, row + 1, h});
      }
    }
  }
  const auto run = [&](int64_t begin, int64_t end) {
    std::vector<float> logits;  // [group, entries]
    std::vector<double> accumulator(static_cast<size_t>(head_dim));
    for (int64_t t = begin; t < end; ++t) {
      const RowTask& task = tasks[t];
      const SequenceKvRef& seq = sequences[task.sequence];
      const int32_t* block_table = seq.block_tables[task.kv_head];
      for (int32_t row = task.row_begin; row < task.row_end; ++row) {
        const int32_t entries = seq.cached_lengths[task.kv_head] + row + 1;
        const int64_t q_row = static_cast<int64_t>(seq.first_row) + row;
        const bool scored = seq.scores.scores != nullptr && row >= seq.scores.first_row;
        logits.assign(static_cast<size_t>(group) * entries, 0.0f);
        for (int32_t j = 0; j < entries; ++j) {
          const int64_t entry = EntryOffset(pool, block_table, j);
          const float* key = pool.keys + entry * head_dim;
          const float log_vote = pool.log_votes[entry];
          for (int32_t g = 0; g < group; ++g) {
            const float* query = q.f32() + q_row * q.cols + (task.kv_head * group + g) * head_dim;
            float dot = 0.0f;
            for (int32_t d = 0; d < head_dim; ++d) dot += query[d] * key[d];
            logits[static_cast<size_t>(g) * entries + j] = dot * shape.scale + log_vote;
          }
        }
        for (int32_t g = 0; g < group; ++g) {
          float* row_logits = logits.data() + static_cast<size_t>(g) * entries;
          const float max_logit = *std::max_element(row_logits, row_logits + entries);
          double total = 0.0;
          std::fill(accumulator.begin(), accumulator.end(), 0.0);
          for (int32_t j = 0; j < entries; ++j) {
            const float weight = std::exp(row_logits[j] - max_logit);
            row_logits[j] = weight;
            total += weight;
            const float* value = pool.values + EntryOffset(pool, block_table, j) * head_dim;
            for (int32_t d = 0; d < head_dim; ++d) accumulator[d] += double{weight} * value[d];
          }
          float* dst = out.f32() + q_row * out.cols + (task.kv_head * group + g) * head_dim;
          for (int32_t d = 0; d < head_dim; ++d) {
            dst[d] = static_cast<float>(accumulator[d] / total);
          }
          if (scored) {
            for (int32_t j = 0; j < entries; ++j) {
              FoldScore(seq.scores, task.kv_head, j, static_cast<float>(row_logits[j] / total));
            }
          }
        }
      }
    }
  };
  if (work < kMinParallelWork) {
    run(0, static_cast<int64_t>(tasks.size()));
  } else {
    threads.ParallelFor(static_cast<int64_t>(tasks.size()), run);
  }
}

}  // namespace kvd::kernels::cpu
