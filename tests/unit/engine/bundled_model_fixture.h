// A test fixture with the bundled model loaded once per suite on the CPU backend and a fresh
// KV pool per test, for tests that run forward passes.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>

#include "engine/kv_cache.h"
#include "engine/model.h"
#include "kernels/backend.h"
#include "reference_model.h"

namespace kvd::engine::testing {

// `kBlocksPerHead`: pool blocks for each (layer, kv head) of the model.
template <int32_t kBlocksPerHead>
class BundledModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    backend_ = kernels::CreateBackend("cpu", {.num_threads = 2})->release();
    auto model = Model::Load(BundledModelDir(), *backend_);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = model->release();
  }
  static void TearDownTestSuite() {
    delete model_;
    delete backend_;
    model_ = nullptr;
    backend_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(model_, nullptr);
    const ModelConfig& config = model_->config();
    auto pool = KvBlockPool::Create(
        *backend_, {.num_blocks = kBlocksPerHead * config.num_layers * config.num_kv_heads,
                    .block_size = 16,
                    .head_dim = config.head_dim});
    ASSERT_TRUE(pool.ok());
    pool_ = *std::move(pool);
  }
  // An empty sequence with room for `tokens` entries in every (layer, kv head).
  std::unique_ptr<SequenceKv> NewSequence(int32_t tokens) {
    const ModelConfig& config = model_->config();
    auto kv = std::make_unique<SequenceKv>(config.num_layers, config.num_kv_heads);
    EXPECT_TRUE(kv->Reserve(*pool_, tokens).ok());
    return kv;
  }

  static inline kernels::Backend* backend_ = nullptr;
  static inline Model* model_ = nullptr;
  std::unique_ptr<KvBlockPool> pool_;
};

}  // namespace kvd::engine::testing
