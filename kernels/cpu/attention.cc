#include "kernels/cpu/attention.h"

#include <algorithm>
#include <vector>

#include "base/check.h"
#include "kernels/cpu/attention_row.h"
#include "kernels/cpu/attention_rows.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/score_fold.h"

namespace kvd::kernels::cpu {
namespace {

// Below this many multiply-adds a step's attention runs on the calling thread alone: waking
// workers costs more than it saves.
constexpr int64_t kMinParallelWork = 1 << 16;

// Query heads a chunk of rows hands the rows kernel at least (a prompt's last chunk may have
// fewer): enough to share each block of transposed keys.
constexpr int32_t kQueriesPerChunk = 32;

// Rows of a chunk for the rows kernel: at least kQueriesPerChunk query heads, in whole passes of
// eight, so that no query takes a pass of its own.
int32_t RowsPerChunk(int32_t group) {
  int32_t rows = std::max(2, (kQueriesPerChunk + group - 1) / group);
  while (rows * group % 8 != 0) ++rows;
  return rows;
}

// Rows [row_begin, row_end) of one sequence's new rows at one kv head. A sequence that collects
// scores has one task per kv head for all its rows, so no two threads fold into one score; the
// others have a task per chunk of rows.
struct RowTask {
  int32_t sequence;
  int32_t row_begin;
  int32_t row_end;
  int32_t kv_head;
};

}  // namespace

void PagedAttention(const Tensor& q, const KvPool& pool, std::span<const SequenceKvRef> sequences,
                    const AttentionShape& shape, Tensor out, ThreadPool& threads) {
  const int32_t group = shape.num_heads / shape.num_kv_heads;
  const int32_t head_dim = shape.head_dim;
  const AttentionRowKernel row_kernel = HostKernels().attention_row.kernel;
  const AttentionRowsKernel rows_kernel = HostKernels().attention_rows;
  const ScoreFoldKernel fold_scores = HostKernels().score_fold.kernel;
  // Rows one call computes: a chunk for the rows kernel, else one.
  const int32_t chunk_rows = rows_kernel == nullptr ? 1 : RowsPerChunk(group);
  KVD_CHECK(q.cols == out.cols);  // the rows kernel's one row stride
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
        for (int32_t row = 0; row < seq.num_rows; row += chunk_rows) {
          tasks.push_back({s, row, std::min(seq.num_rows, row + chunk_rows), h});
        }
      }
    }
  }
  const auto run = [&](int64_t begin, int64_t end) {
    std::vector<KvSlot> slots;
    std::vector<float> weights;  // [rows of the chunk, group, stride]
    std::vector<double> totals;  // [rows of the chunk, group]
    for (int64_t t = begin; t < end; ++t) {
      const RowTask& task = tasks[t];
      const SequenceKvRef& seq = sequences[task.sequence];
      const int32_t* block_table = seq.block_tables[task.kv_head];
      const int32_t cached = seq.cached_lengths[task.kv_head];
      // The task's last row sees every entry the others see, and more.
      const int32_t seen = cached + task.row_end;
      slots.resize(static_cast<size_t>(seen));
      EntrySlots(pool, block_table, slots);
      const int64_t first_head = static_cast<int64_t>(task.kv_head) * group * head_dim;
      for (int32_t row = task.row_begin; row < task.row_end; row += chunk_rows) {
        const int32_t rows = std::min(chunk_rows, task.row_end - row);
        const int32_t first_entries = cached + row + 1;
        const int64_t q_row = static_cast<int64_t>(seq.first_row) + row;
        // Head g of row r's weights at (r * group + g) * stride.
        const int64_t stride =
            rows > 1 ? RowsWeightStride(first_entries + rows - 1) : first_entries;
        weights.resize(static_cast<size_t>(rows * group * stride));
        totals.resize(static_cast<size_t>(rows) * group);
        if (rows > 1) {
          rows_kernel({.pool = &pool,
                       .slots = slots.data(),
                       .first_entries = first_entries,
                       .rows = rows,
                       .group = group,
                       .head_dim = head_dim,
                       .scale = shape.scale,
                       .queries = q.f32() + q_row * q.cols + first_head,
                       .out = out.f32() + q_row * out.cols + first_head,
                       .row_stride = q.cols,
                       .weights = weights.data(),
                       .weight_stride = stride,
                       .totals = totals.data()});
        } else {
          row_kernel({.pool = &pool,
                      .slots = slots.data(),
                      .entries = first_entries,
                      .group = group,
                      .head_dim = head_dim,
                      .scale = shape.scale,
                      .queries = q.f32() + q_row * q.cols + first_head,
                      .out = out.f32() + q_row * out.cols + first_head,
                      .weights = weights.data(),
                      .totals = totals.data()});
        }
        if (seq.scores.scores == nullptr) continue;
        float* head_scores =
            seq.scores.scores + static_cast<int64_t>(task.kv_head) * seq.scores.stride;
        for (int32_t r = std::max(0, seq.scores.first_row - row); r < rows; ++r) {
          for (int32_t g = 0; g < group; ++g) {
            const int64_t head = int64_t{r} * group + g;
            fold_scores(weights.data() + head * stride, first_entries + r, totals[head],
                        seq.scores.reduce, head_scores);
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
