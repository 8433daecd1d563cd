// The op-timing backend runs every op of the backend it wraps unchanged, and the op-times
// benchmark counts each op once per call, as the model's forward pass makes them.
#include "bench/op_times.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "bench/op_timing_backend.h"
#include "engine/kv_cache.h"
#include "engine/model.h"
#include "kernels/backend.h"
#include "tests/unit/engine/reference_model.h"

namespace kvd::bench {
namespace {

using engine::testing::BundledModelDir;

class OpTimesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto backend = kernels::CreateBackend("cpu", {.num_threads = 2});
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = *std::move(backend);
    timing_ = std::make_unique<OpTimingBackend>(*backend_);
  }

  // The last row's logits of `tokens`, prefilled in one step on `model`.
  static std::vector<float> LastLogits(engine::Model& model, const std::vector<int32_t>& tokens) {
    const engine::ModelConfig& config = model.config();
    auto pool = engine::KvBlockPool::Create(
        model.backend(), {.num_blocks = 4 * config.num_layers * config.num_kv_heads,
                          .block_size = 16,
                          .head_dim = config.head_dim});
    EXPECT_TRUE(pool.ok());
    engine::SequenceKv kv(config.num_layers, config.num_kv_heads);
    EXPECT_TRUE(kv.Reserve(**pool, static_cast<int32_t>(tokens.size())).ok());
    engine::StepLogits logits;
    engine::SequenceStep step{&kv, tokens, engine::LogitRows::kLast};
    EXPECT_TRUE(model.Forward({&step, 1}, **pool, logits).ok());
    std::vector<float> row(logits.values.begin(), logits.values.end());
    kv.Release(**pool);
    return row;
  }

  std::unique_ptr<kernels::Backend> backend_;
  std::unique_ptr<OpTimingBackend> timing_;
};

TEST_F(OpTimesTest, TheWrappedBackendComputesWhatTheBackendDoesInEveryMode) {
  auto direct = engine::Model::Load(BundledModelDir(), *backend_);
  auto wrapped = engine::Model::Load(BundledModelDir(), *timing_);
  ASSERT_TRUE(direct.ok() && wrapped.ok());
  const std::vector<int32_t> tokens = {1, 17, 42, 99, 7, 3, 250, 12, 8, 64};
  const std::vector<float> expected = LastLogits(**direct, tokens);
  ASSERT_FALSE(expected.empty());
  for (auto mode : {OpTimingBackend::Mode::kOff, OpTimingBackend::Mode::kHost,
                    OpTimingBackend::Mode::kSynchronized}) {
    timing_->set_mode(mode);
    EXPECT_EQ(LastLogits(**wrapped, tokens), expected) << static_cast<int>(mode);
  }
  EXPECT_FALSE(timing_->times().empty());
  timing_->Reset();
  timing_->set_mode(OpTimingBackend::Mode::kOff);
  LastLogits(**wrapped, tokens);
  EXPECT_TRUE(timing_->times().empty()) << "nothing is recorded while timing is off";
}

TEST_F(OpTimesTest, EachDecodeStepCountsTheModelsOps) {
  auto model = engine::Model::Load(BundledModelDir(), *timing_);
  ASSERT_TRUE(model.ok()) << model.status();
  const int32_t layers = (*model)->config().num_layers;
  const ThroughputOptions options{
      .batch_sizes = {1, 3}, .prompt_tokens = 8, .decode_tokens = 4};
  auto results = MeasureOpTimes(**model, *timing_, options);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 2u);
  for (const OpTimesResult& result : *results) {
    auto calls = [&](std::string_view op) {
      auto row = std::find_if(result.ops.begin(), result.ops.end(),
                              [&](const OpTimeRow& r) { return r.op == op; });
      return row == result.ops.end() ? 0.0 : row->calls_per_step;
    };
    // Per layer two norms, two rotations (q and k), one append, one attention; then the final
    // norm and one top-logits call for the step.
    EXPECT_EQ(calls("RmsNorm"), 2 * layers + 1) << "batch " << result.batch_size;
    EXPECT_EQ(calls("ApplyRope"), 2 * layers);
    EXPECT_EQ(calls("AppendKv"), layers);
    EXPECT_EQ(calls("Attention"), layers);
    EXPECT_EQ(calls("TopLogits"), 1);
    EXPECT_GT(result.step_ms, 0.0);
    EXPECT_GT(result.synchronized_step_ms, 0.0);
    for (const OpTimeRow& row : result.ops) {
      EXPECT_GT(row.host_us_per_step, 0.0) << row.op;
      EXPECT_GT(row.synchronized_us_per_step, 0.0) << row.op;
    }
    EXPECT_TRUE(std::is_sorted(result.ops.begin(), result.ops.end(),
                               [](const OpTimeRow& a, const OpTimeRow& b) {
                                 return a.synchronized_us_per_step > b.synchronized_us_per_step;
                               }));
  }
}

TEST_F(OpTimesTest, RefusesAModelOnAnotherBackendAndNoDecodeSteps) {
  auto model = engine::Model::Load(BundledModelDir(), *backend_);
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(MeasureOpTimes(**model, *timing_, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto wrapped = engine::Model::Load(BundledModelDir(), *timing_);
  ASSERT_TRUE(wrapped.ok());
  EXPECT_EQ(MeasureOpTimes(**wrapped, *timing_, {.decode_tokens = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvd::bench
