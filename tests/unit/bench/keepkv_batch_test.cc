// KeepKV's batch benchmark runs on a model without a tokenizer (random letters' byte ids), and
// a 10% budget compresses the batch's own entries and holds fewer KV blocks than none.
#include <gtest/gtest.h>

#include <memory>

#include "bench/keepkv_bench.h"
#include "engine/model.h"
#include "kernels/backend.h"
#include "tests/unit/engine/reference_model.h"

namespace kvd::bench {
namespace {

TEST(KeepKvBatchTest, ABudgetHoldsFewerBlocksWithoutATokenizer) {
  auto backend = kernels::CreateBackend("cpu", {.num_threads = 2});
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto model = engine::Model::Load(engine::testing::BundledModelDir(), **backend);
  ASSERT_TRUE(model.ok()) << model.status();
  KeepKvBenchOptions options;
  options.batch_sequences = 3;
  options.batch_prompt_tokens = 160;
  options.batch_decode_tokens = 8;
  options.batch_kv_cache_bytes = size_t{64} << 20;

  auto unbounded = MeasureKeepKvBatch(**model, nullptr, options, /*keepkv=*/false);
  ASSERT_TRUE(unbounded.ok()) << unbounded.status();
  auto bounded = MeasureKeepKvBatch(**model, nullptr, options, /*keepkv=*/true);
  ASSERT_TRUE(bounded.ok()) << bounded.status();

  EXPECT_FALSE(unbounded->keepkv);
  EXPECT_TRUE(bounded->keepkv);
  EXPECT_GT(unbounded->decode_tokens_per_second, 0.0);
  EXPECT_GT(bounded->decode_tokens_per_second, 0.0);
  EXPECT_EQ(unbounded->compressed_fraction, 0.0);
  // A tenth of each prompt's own entries kept: most of them merged or evicted.
  EXPECT_GT(bounded->compressed_fraction, 0.8);
  EXPECT_LT(bounded->peak_kv_blocks, unbounded->peak_kv_blocks);
}

}  // namespace
}  // namespace kvd::bench
