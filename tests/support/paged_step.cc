// A random forward step over a paged KV pool.
#include "tests/support/paged_step.h"

#include <algorithm>
#include <utility>

#include "tests/support/kernel_test_values.h"

namespace kvd::kernels {

std::string HeadShapeName(const HeadShape& shape) {
  return std::to_string(shape.heads) + "x" + std::to_string(shape.kv_heads) + "x" +
         std::to_string(shape.head_dim);
}

PagedStep MakePagedStep(const HeadShape& shape, int32_t block_size,
                        std::span<const SequenceSpec> specs,
                        const std::function<int32_t(const SequenceSpec&, int32_t)>& cached_length,
                        std::mt19937& random) {
  PagedStep step;
  step.cached.resize(specs.size());
  step.tables.resize(specs.size());
  for (size_t s = 0; s < specs.size(); ++s) {
    for (int32_t h = 0; h < shape.kv_heads; ++h) {
      const int32_t cached = cached_length(specs[s], h);
      step.cached[s].push_back(cached);
      std::vector<int32_t> table;
      for (int32_t b = 0; b < (cached + specs[s].rows + block_size - 1) / block_size; ++b) {
        table.push_back(step.blocks++);
      }
      step.tables[s].push_back(std::move(table));
    }
    step.total_rows += specs[s].rows;
  }
  // Blocks are handed out in a shuffled order, so that tables jump around the pool.
  std::vector<int32_t> order(step.blocks);
  for (int32_t b = 0; b < step.blocks; ++b) order[b] = b;
  std::shuffle(order.begin(), order.end(), random);
  for (auto& sequence : step.tables) {
    for (auto& table : sequence) {
      for (int32_t& block : table) block = order[block];
    }
  }
  const size_t entries = static_cast<size_t>(step.blocks) * block_size;
  const size_t new_rows = static_cast<size_t>(step.total_rows);
  step.keys = RandomNormals(random, entries * shape.head_dim, 0.5f);
  step.values = RandomNormals(random, entries * shape.head_dim);
  step.votes = RandomNormals(random, entries, 0.5f);
  step.q = RandomNormals(random, new_rows * shape.heads * shape.head_dim);
  step.k = RandomNormals(random, new_rows * shape.kv_heads * shape.head_dim, 0.5f);
  step.v = RandomNormals(random, new_rows * shape.kv_heads * shape.head_dim);
  return step;
}

}  // namespace kvd::kernels
