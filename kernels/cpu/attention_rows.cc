#include "kernels/cpu/attention_rows.h"

#include <algorithm>
#include <vector>

namespace kvd::kernels::cpu {

void RunRowByRow(const AttentionRows& a, AttentionRowKernel row) {
  std::vector<float> weights;
  for (int32_t r = 0; r < a.rows; ++r) {
    const int32_t entries = a.first_entries + r;
    const int64_t head = int64_t{r} * a.group;
    weights.resize(static_cast<size_t>(a.group) * entries);
    row({.pool = a.pool,
         .slots = a.slots,
         .entries = entries,
         .group = a.group,
         .head_dim = a.head_dim,
         .scale = a.scale,
         .queries = a.queries + r * a.row_stride,
         .out = a.out + r * a.row_stride,
         .weights = weights.data(),
         .totals = a.totals + head});
    for (int32_t g = 0; g < a.group; ++g) {
      std::copy_n(weights.data() + int64_t{g} * entries, entries,
                  a.weights + (head + g) * a.weight_stride);
    }
  }
}

}  // namespace kvd::kernels::cpu
