#include "kernels/cpu/attention_row.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace kvd::kernels::cpu {
namespace {

// Element d of the key or value at `slot` of `base` (the pool's keys or values).
float PoolElement(const KvPool& pool, const void* base, int64_t slot, int32_t d) {
  return ElementAsFloat(
      static_cast<const char*>(base) + static_cast<size_t>(slot) * pool.vector_bytes(), pool.dtype,
      d);
}

void RunScalar(const AttentionRow& a) {
  const KvPool& pool = *a.pool;
  for (int32_t j = 0; j < a.entries; ++j) {
    const float log_vote = pool.log_votes[a.slots[j]];
    for (int32_t g = 0; g < a.group; ++g) {
      const float* query = a.queries + static_cast<int64_t>(g) * a.head_dim;
      float dot = 0.0f;
      for (int32_t d = 0; d < a.head_dim; ++d) {
        dot += query[d] * PoolElement(pool, pool.keys, a.slots[j], d);
      }
      a.weights[static_cast<int64_t>(g) * a.entries + j] = dot * a.scale + log_vote;
    }
  }
  std::vector<double> accumulator(static_cast<size_t>(a.head_dim));
  for (int32_t g = 0; g < a.group; ++g) {
    float* weights = a.weights + static_cast<int64_t>(g) * a.entries;
    const float max_logit = *std::max_element(weights, weights + a.entries);
    double total = 0.0;
    std::fill(accumulator.begin(), accumulator.end(), 0.0);
    for (int32_t j = 0; j < a.entries; ++j) {
      const float weight = std::exp(weights[j] - max_logit);
      weights[j] = weight;
      total += weight;
      for (int32_t d = 0; d < a.head_dim; ++d) {
        accumulator[d] += double{weight} * PoolElement(pool, pool.values, a.slots[j], d);
      }
    }
    float* dst = a.out + static_cast<int64_t>(g) * a.head_dim;
    for (int32_t d = 0; d < a.head_dim; ++d) dst[d] = static_cast<float>(accumulator[d] / total);
    a.totals[g] = total;
  }
}

}  // namespace

AttentionRowKernel ScalarAttentionRow() { return RunScalar; }

}  // namespace kvd::kernels::cpu
