#include "cache_store/keepkv/merge_pairs.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/row_dots.h"

namespace kvd::cache_store {
namespace {

struct Edge {
  float cosine;
  int32_t a;
  int32_t b;
};

// Keys scaled to unit length, so that a dot product is the cosine; a zero key stays zero and
// matches nothing.
std::vector<float> UnitKeys(std::span<const float> keys, int32_t head_dim) {
  std::vector<float> unit(keys.begin(), keys.end());
  for (size_t row = 0; row < unit.size(); row += head_dim) {
    double norm = 0.0;
    for (int32_t d = 0; d < head_dim; ++d) norm += double{unit[row + d]} * unit[row + d];
    const float scale = norm > 0.0 ? static_cast<float>(1.0 / std::sqrt(norm)) : 0.0f;
    for (int32_t d = 0; d < head_dim; ++d) unit[row + d] *= scale;
  }
  return unit;
}

float Dot(const float* a, const float* b, int32_t n) {
  float dot = 0.0f;
  for (int32_t d = 0; d < n; ++d) dot += a[d] * b[d];
  return dot;
}

// Unit rows stored transposed, so that one row's cosines with all of them run along the rows
// in vectors (kernels/cpu/row_dots.h) while each is still summed over the dimensions in order,
// exactly as Dot sums it.
class CosineTable {
 public:
  CosineTable(std::span<const float> unit, int32_t head_dim)
      : rows_(static_cast<int32_t>(unit.size() / head_dim)),
        head_dim_(head_dim),
        transposed_(unit.size()),
        cosines_(rows_),
        row_dots_(kernels::cpu::HostKernels().row_dots.kernel) {
    for (int32_t i = 0; i < rows_; ++i) {
      for (int32_t d = 0; d < head_dim_; ++d) {
        transposed_[static_cast<size_t>(d) * rows_ + i] =
            unit[static_cast<size_t>(i) * head_dim_ + d];
      }
    }
  }

  // Dot(a, row j) for every row j, valid until the next call.
  std::span<const float> With(const float* a) {
    row_dots_(a, transposed_.data(), head_dim_, rows_, cosines_.data());
    return cosines_;
  }

 private:
  int32_t rows_;
  int32_t head_dim_;
  std::vector<float> transposed_;  // [head_dim, rows]
  std::vector<float> cosines_;
  kernels::cpu::RowDotsKernel row_dots_;
};

}  // namespace

std::vector<MergePair> SelectLowestScoredMerges(std::span<const float> keys,
                                                std::span<const float> values, int32_t head_dim,
                                                std::span<const uint8_t> mergeable,
                                                std::span<const float> scores, int32_t count,
                                                float min_cosine, float min_value_cosine) {
  const int32_t n = static_cast<int32_t>(mergeable.size());
  std::vector<int32_t> order;
  for (int32_t i = 0; i < n; ++i) {
    if (mergeable[i]) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return scores[a] != scores[b] ? scores[a] < scores[b] : a < b;
  });
  const std::vector<float> unit = UnitKeys(keys, head_dim);
  auto row = [&](int32_t i) { return unit.data() + static_cast<size_t>(i) * head_dim; };
  // The value gate is off at -1, the least cosine there is: no unit values needed.
  const bool gate_values = min_value_cosine > -1.0f;
  const std::vector<float> unit_values =
      gate_values ? UnitKeys(values, head_dim) : std::vector<float>();
  auto value_row = [&](int32_t i) {
    return unit_values.data() + static_cast<size_t>(i) * head_dim;
  };
  count = std::clamp<int32_t>(count, 0, static_cast<int32_t>(order.size()));
  std::vector<uint8_t> alive(mergeable.begin(), mergeable.end());
  std::vector<MergePair> merges;
  CosineTable table(unit, head_dim);
  for (int32_t k = 0; k < count; ++k) {
    const int32_t i = order[k];
    alive[i] = 0;
    int32_t best = -1;
    float best_cosine = min_cosine;
    const std::span<const float> cosines = table.With(row(i));
    for (int32_t j = 0; j < n; ++j) {
      if (!alive[j]) continue;
      const float cosine = cosines[j];
      if (!(cosine > best_cosine || (best < 0 && cosine == best_cosine))) continue;
      if (gate_values && Dot(value_row(i), value_row(j), head_dim) < min_value_cosine) continue;
      best = j;
      best_cosine = cosine;
    }
    merges.push_back({i, best, best < 0 ? 0.0f : best_cosine});
  }
  return merges;
}

std::vector<MergePair> SelectMergePairs(std::span<const float> keys, int32_t head_dim,
                                        std::span<const uint8_t> mergeable,
                                        std::span<const float> scores,
                                        const MergePairOptions& options) {
  const int32_t n = static_cast<int32_t>(mergeable.size());
  std::vector<MergePair> pairs;
  if (options.max_pairs <= 0 || n < 2) return pairs;
  const std::vector<float> unit = UnitKeys(keys, head_dim);
  std::vector<uint8_t> candidate(mergeable.begin(), mergeable.end());
  for (int32_t i = 0; i < n; ++i) {
    const float* key = unit.data() + static_cast<size_t>(i) * head_dim;
    if (Dot(key, key, head_dim) == 0.0f) candidate[i] = 0;
  }
  // Each mergeable entry's most similar mergeable partner: one edge per entry.
  std::vector<Edge> edges;
  CosineTable table(unit, head_dim);
  for (int32_t i = 0; i < n; ++i) {
    if (!candidate[i]) continue;
    const std::span<const float> cosines =
        table.With(unit.data() + static_cast<size_t>(i) * head_dim);
    Edge best{-2.0f, i, -1};
    for (int32_t j = 0; j < n; ++j) {
      if (j == i || !candidate[j]) continue;
      const float dot = cosines[j];
      if (dot > best.cosine) best = {dot, i, j};
    }
    if (best.b >= 0 && best.cosine >= options.min_cosine) edges.push_back(best);
  }
  // Greedy matching, most similar first; ties to the earlier entries, so the result does not
  // depend on the order edges were found in.
  std::sort(edges.begin(), edges.end(), [](const Edge& x, const Edge& y) {
    if (x.cosine != y.cosine) return x.cosine > y.cosine;
    const auto [x_low, x_high] = std::minmax(x.a, x.b);
    const auto [y_low, y_high] = std::minmax(y.a, y.b);
    return x_low != y_low ? x_low < y_low : x_high < y_high;
  });
  std::vector<uint8_t> taken(n, 0);
  for (const Edge& edge : edges) {
    if (static_cast<int32_t>(pairs.size()) == options.max_pairs) break;
    if (taken[edge.a] || taken[edge.b]) continue;
    taken[edge.a] = taken[edge.b] = 1;
    const auto [low, high] = std::minmax(edge.a, edge.b);
    // The lower score is evicted; on a tie, the earlier entry.
    const bool evict_low = scores[low] <= scores[high];
    pairs.push_back({evict_low ? low : high, evict_low ? high : low, edge.cosine});
  }
  return pairs;
}

}  // namespace kvd::cache_store
