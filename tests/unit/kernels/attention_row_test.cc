// Every attention row kernel this CPU runs against the scalar reference: scattered pool slots,
// log-votes, GQA groups of every kernel's head blocking, head sizes with tails of both vector
// widths and every pass of the value sum, entry counts around the kernels' steps of 4, 8 and 32,
// one entry alone, and pools of f32 and of bf16.
#include "kernels/cpu/attention_row.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/kernel_table.h"

namespace kvd::kernels::cpu {
namespace {

constexpr size_t kNanPadding = 16;
const float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr uint16_t kBf16Nan = 0x7fc0;

TEST(AttentionRowTest, EveryKernelMatchesTheScalarReference) {
  std::mt19937 random(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::vector<KernelVariant<AttentionRowKernel>> kernels =
      AllKernels().attention_row.RunnableHere();
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    for (int32_t head_dim : {8, 32, 36, 64, 80, 112, 128}) {
      for (int32_t group : {1, 2, 3, 4, 7, 8}) {
        for (int32_t entries : {1, 6, 7, 8, 33, 300}) {
          const int32_t slots_in_pool = entries * 2;
          // NaNs follow the pool's keys and values and the queries: a lane past a head's end
          // that a kernel loads and uses turns its outputs into NaN (entry 0 is the last slot).
          const size_t pool_elements = static_cast<size_t>(slots_in_pool) * head_dim;
          std::vector<float> keys(pool_elements + kNanPadding, kNan);
          std::vector<float> values(keys.size(), kNan);
          std::vector<float> log_votes(static_cast<size_t>(slots_in_pool));
          for (size_t i = 0; i < pool_elements; ++i) {
            keys[i] = normal(random);
            values[i] = normal(random);
          }
          for (float& v : log_votes) v = 0.5f * std::abs(normal(random));
          // A bf16 pool holds the rounded keys and values; the f32 reference reads the same
          // numbers from an f32 pool.
          std::vector<uint16_t> keys_bf16(keys.size(), kBf16Nan),
              values_bf16(keys.size(), kBf16Nan);
          for (size_t i = 0; i < pool_elements; ++i) {
            keys_bf16[i] = FloatToBF16(keys[i]);
            values_bf16[i] = FloatToBF16(values[i]);
            if (dtype == DType::kBF16) {
              keys[i] = BF16ToFloat(keys_bf16[i]);
              values[i] = BF16ToFloat(values_bf16[i]);
            }
          }
          const KvPool f32_pool{keys.data(), values.data(), log_votes.data(), slots_in_pool,
                                1,           head_dim};
          const KvPool pool =
              dtype == DType::kF32
                  ? f32_pool
                  : KvPool{keys_bf16.data(), values_bf16.data(), log_votes.data(), slots_in_pool, 1,
                           head_dim,         DType::kBF16};
          // Every other slot, backwards: the kernels must follow `slots`, not memory order.
          std::vector<int64_t> slots(static_cast<size_t>(entries));
          for (int32_t j = 0; j < entries; ++j) slots[j] = slots_in_pool - 1 - 2 * j;
          std::vector<float> queries(static_cast<size_t>(group) * head_dim + kNanPadding, kNan);
          for (int64_t i = 0; i < int64_t{group} * head_dim; ++i) queries[i] = normal(random);
          struct Result {
            std::vector<float> out, weights;
            std::vector<double> totals;
          };
          const auto run = [&](AttentionRowKernel kernel, const KvPool& pool) {
            Result r{std::vector<float>(static_cast<size_t>(group) * head_dim, -1.0f),
                     std::vector<float>(static_cast<size_t>(group) * entries),
                     std::vector<double>(static_cast<size_t>(group))};
            kernel({.pool = &pool,
                    .slots = slots.data(),
                    .entries = entries,
                    .group = group,
                    .head_dim = head_dim,
                    .scale = 0.125f,
                    .queries = queries.data(),
                    .out = r.out.data(),
                    .weights = r.weights.data(),
                    .totals = r.totals.data()});
            return r;
          };
          const Result want = run(ScalarAttentionRow(), f32_pool);
          // The reference reads a bf16 pool as the f32 numbers it holds.
          EXPECT_EQ(run(ScalarAttentionRow(), pool).out, want.out)
              << DTypeName(dtype) << " head_dim " << head_dim << " group " << group;
          for (const KernelVariant<AttentionRowKernel>& kernel : kernels) {
            const Result got = run(kernel.kernel, pool);
            const std::string label = std::string(kernel.name) + " " +
                                      std::string(DTypeName(dtype)) + " head_dim " +
                                      std::to_string(head_dim) + " group " + std::to_string(group) +
                                      " entries " + std::to_string(entries);
            // Outputs are convex combinations of unit normals, weights are in (0, 1]: f32 sums
            // in another order stay within 1e-5.
            for (size_t i = 0; i < want.out.size(); ++i) {
              EXPECT_NEAR(got.out[i], want.out[i], 1e-5) << label;
            }
            for (size_t i = 0; i < want.weights.size(); ++i) {
              EXPECT_NEAR(got.weights[i], want.weights[i], 1e-5) << label;
            }
            for (int32_t g = 0; g < group; ++g) {
              EXPECT_NEAR(got.totals[g], want.totals[g], 1e-5 * entries) << label;
              // The largest weight of each head is exp(0) = 1.
              const auto first = got.weights.begin() + static_cast<int64_t>(g) * entries;
              EXPECT_EQ(*std::max_element(first, first + entries), 1.0f) << label;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace kvd::kernels::cpu
