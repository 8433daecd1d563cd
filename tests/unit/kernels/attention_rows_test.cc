// The rows kernel against the scalar row kernel run row by row: scattered pool slots,
// log-votes, groups that split its passes of eight and four queries across rows, head sizes with
// tails and every pass of the value sum, first rows that see one entry, a block of sixteen and
// more, chunks of one to nine rows, and pools of f32 and of bf16. A variant on AMX tiles rounds a
// bf16 pool's queries and softmax weights to bf16 for its products: it is held to the reference
// run on the rounded queries, its outputs within the weights' rounding (below).
#include "kernels/cpu/attention_rows.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/kernel_table.h"

namespace kvd::kernels::cpu {
namespace {

constexpr size_t kNanPadding = 16;
const float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr uint16_t kBf16Nan = 0x7fc0;

struct Result {
  std::vector<float> out, weights;
  std::vector<double> totals;
};

TEST(AttentionRowsTest, MatchesTheScalarRowKernelRowByRow) {
  for (const KernelVariant<AttentionRowsKernel>& variant :
       AllKernels().attention_rows.RunnableHere()) {
    SCOPED_TRACE(variant.name);
    const AttentionRowsKernel kernel = variant.kernel;
    const bool tiles = (variant.needs & kIsaAmxBf16) != 0;
    std::mt19937 random(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      for (int32_t head_dim : {8, 36, 64, 80, 96, 128}) {
        for (int32_t group : {1, 2, 3, 4, 7}) {
          for (int32_t first_entries : {1, 16, 17, 28, 200}) {
            for (int32_t rows : {1, 2, 5, 9, 10}) {
              const int32_t entries = first_entries + rows - 1;
              const int32_t slots_in_pool = entries * 2;
              // NaNs follow the pool's keys and values and the queries: a lane past a head's end
              // that the kernel loads and uses turns its outputs into NaN (entry 0 is the last
              // slot).
              const size_t pool_elements = static_cast<size_t>(slots_in_pool) * head_dim;
              std::vector<float> keys(pool_elements + kNanPadding, kNan);
              std::vector<float> values(keys.size(), kNan);
              std::vector<float> log_votes(static_cast<size_t>(slots_in_pool));
              std::vector<uint16_t> keys_bf16(keys.size(), kBf16Nan);
              std::vector<uint16_t> values_bf16(keys.size(), kBf16Nan);
              for (size_t i = 0; i < pool_elements; ++i) {
                keys_bf16[i] = FloatToBF16(normal(random));
                values_bf16[i] = FloatToBF16(normal(random));
                // Numbers bf16 holds exactly, so that both pools hold the same ones.
                keys[i] = BF16ToFloat(keys_bf16[i]);
                values[i] = BF16ToFloat(values_bf16[i]);
              }
              for (float& v : log_votes) v = 0.5f * std::abs(normal(random));
              const KvPool pool =
                  dtype == DType::kF32
                      ? KvPool{keys.data(), values.data(), log_votes.data(), slots_in_pool,
                               1,           head_dim}
                      : KvPool{keys_bf16.data(),
                               values_bf16.data(),
                               log_votes.data(),
                               slots_in_pool,
                               1,
                               head_dim,
                               DType::kBF16};
              // Every other slot, backwards: the kernel must follow `slots`, not memory order.
              std::vector<int64_t> slots(static_cast<size_t>(entries));
              for (int32_t j = 0; j < entries; ++j) slots[j] = slots_in_pool - 1 - 2 * j;
              // Rows of queries further apart than a row's heads, as a step's q tensor is.
              const int64_t row_stride = int64_t{group} * head_dim + 5;
              std::vector<float> queries(rows * row_stride + kNanPadding, kNan);
              for (int32_t r = 0; r < rows; ++r) {
                for (int64_t i = 0; i < int64_t{group} * head_dim; ++i) {
                  queries[r * row_stride + i] = normal(random);
                }
              }
              // The narrowest stride, or wider than the kernel needs (so that one that assumes
              // the narrowest is caught, and one that writes past it too).
              const int64_t narrowest = RowsWeightStride(entries);
              const int64_t weight_stride = narrowest + (rows % 2 == 0 ? 16 : 0);
              const auto run = [&](auto&& body) {
                Result r{std::vector<float>(rows * row_stride, -1.0f),
                         std::vector<float>(static_cast<size_t>(rows) * group * weight_stride, -1),
                         std::vector<double>(static_cast<size_t>(rows) * group)};
                body(AttentionRows{.pool = &pool,
                                   .slots = slots.data(),
                                   .first_entries = first_entries,
                                   .rows = rows,
                                   .group = group,
                                   .head_dim = head_dim,
                                   .scale = 0.125f,
                                   .queries = queries.data(),
                                   .out = r.out.data(),
                                   .row_stride = row_stride,
                                   .weights = r.weights.data(),
                                   .weight_stride = weight_stride,
                                   .totals = r.totals.data()});
                return r;
              };
              const Result got = run(kernel);
              // Each weight rounded to bf16 is within 2^-8 of itself, so an output is within
              // 2^-8 of the largest |value| of the reference's (whose weights sum to 1), and
              // twice that allows for the f32 sums' order; the tight check below holds the
              // outputs to the kernel's own rounded weights.
              const bool rounded = tiles && dtype == DType::kBF16;
              float out_bound = 1e-5f;
              float largest = 0.0f;
              if (rounded) {
                for (float& x : queries) x = BF16ToFloat(FloatToBF16(x));
                for (size_t i = 0; i < pool_elements; ++i) {
                  largest = std::max(largest, std::abs(values[i]));
                }
                out_bound += largest / 128.0f;
              }
              const Result want = run(AllKernels().attention_rows.Reference().kernel);
              const std::string label =
                  std::string(DTypeName(dtype)) + " head_dim " + std::to_string(head_dim) +
                  " group " + std::to_string(group) + " first_entries " +
                  std::to_string(first_entries) + " rows " + std::to_string(rows);
              for (int32_t r = 0; r < rows; ++r) {
                for (int32_t g = 0; g < group; ++g) {
                  const int64_t head = int64_t{r} * group + g;
                  for (int32_t d = 0; d < head_dim; ++d) {
                    const int64_t i = r * row_stride + int64_t{g} * head_dim + d;
                    EXPECT_NEAR(got.out[i], want.out[i], out_bound) << label;
                  }
                  for (int32_t e = 0; e < first_entries + r; ++e) {
                    const int64_t i = head * weight_stride + e;
                    EXPECT_NEAR(got.weights[i], want.weights[i], 1e-5) << label;
                  }
                  EXPECT_NEAR(got.totals[head], want.totals[head], 1e-5 * entries) << label;
                  // Nothing written past the narrowest stride.
                  for (int64_t i = narrowest; i < weight_stride; ++i) {
                    EXPECT_EQ(got.weights[head * weight_stride + i], -1.0f) << label;
                  }
                  if (!rounded) continue;
                  // The value sum of the weights the kernel returned, rounded as its tiles
                  // round them: the same products, summed in another order.
                  for (int32_t d = 0; d < head_dim; ++d) {
                    double sum = 0.0;
                    for (int32_t e = 0; e < first_entries + r; ++e) {
                      sum +=
                          double{BF16ToFloat(FloatToBF16(got.weights[head * weight_stride + e]))} *
                          values[slots[e] * head_dim + d];
                    }
                    const int64_t i = r * row_stride + int64_t{g} * head_dim + d;
                    EXPECT_NEAR(got.out[i], sum / got.totals[head], 2e-6 * (1.0 + largest))
                        << label;
                  }
                }
                // Nothing written between one row's heads and the next's.
                for (int64_t i = int64_t{group} * head_dim; i < row_stride; ++i) {
                  EXPECT_EQ(got.out[r * row_stride + i], -1.0f) << label;
                }
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace kvd::kernels::cpu
