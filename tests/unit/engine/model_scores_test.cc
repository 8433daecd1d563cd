// Attention scores collected by the forward pass (KV compression's input) on the bundled model:
// probabilities add up per row, chunked steps accumulate what one step computes, collecting
// them leaves the logits unchanged, and a buffer that does not fit is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include "bundled_model_fixture.h"
#include "engine/model.h"
#include "kernels/backend.h"

namespace kvd::engine {
namespace {

class ModelScoresTest : public testing::BundledModelTest<32> {
 protected:
  void SetUp() override {
    BundledModelTest::SetUp();
    std::mt19937 random(5);
    std::uniform_int_distribution<int32_t> token(0, model_->config().vocab_size - 1);
    for (int32_t& t : tokens_) t = token(random);
  }
  std::unique_ptr<SequenceKv> NewSequence() { return BundledModelTest::NewSequence(kTokens); }
  StepScores NewScores(kernels::ScoreReduce reduce) const {
    const ModelConfig& config = model_->config();
    StepScores scores{.reduce = reduce, .stride = kTokens};
    scores.values.assign(static_cast<size_t>(config.num_layers) * config.num_kv_heads * kTokens,
                         0.0f);
    return scores;
  }
  // Runs tokens_[begin, end) as one step of `kv`.
  absl::Status Run(SequenceKv& kv, int32_t begin, int32_t end, StepScores* scores,
                   StepLogits& logits) {
    const SequenceStep step{&kv, std::span(tokens_).subspan(begin, end - begin), LogitRows::kLast,
                            scores};
    return model_->Forward({&step, 1}, *pool_, logits);
  }

  static constexpr int32_t kTokens = 40;
  std::array<int32_t, kTokens> tokens_{};
};

TEST_F(ModelScoresTest, SummedProbabilitiesOfEachHeadAddUpToCountedRowsTimesGroup) {
  const ModelConfig& config = model_->config();
  const int32_t group = config.num_heads / config.num_kv_heads;
  auto kv = NewSequence();
  StepScores scores = NewScores(kernels::ScoreReduce::kSum);
  scores.first_row = 10;
  StepLogits logits;
  ASSERT_TRUE(Run(*kv, 0, kTokens, &scores, logits).ok());
  for (int32_t layer = 0; layer < config.num_layers; ++layer) {
    for (int32_t head = 0; head < config.num_kv_heads; ++head) {
      double total = 0.0;
      for (int32_t j = 0; j < kTokens; ++j) {
        const float p = scores.at(layer, head, config.num_kv_heads, j);
        EXPECT_GE(p, 0.0f);
        total += p;
      }
      EXPECT_NEAR(total, double{kTokens - 10} * group, 1e-3) << layer << "," << head;
    }
  }
}

TEST_F(ModelScoresTest, ChunkedStepsAccumulateWhatOneStepComputes) {
  for (auto reduce : {kernels::ScoreReduce::kMax, kernels::ScoreReduce::kSum}) {
    auto whole_kv = NewSequence();
    StepScores whole = NewScores(reduce);
    StepLogits logits;
    ASSERT_TRUE(Run(*whole_kv, 0, kTokens, &whole, logits).ok());

    auto chunked_kv = NewSequence();
    StepScores chunked = NewScores(reduce);
    ASSERT_TRUE(Run(*chunked_kv, 0, 17, &chunked, logits).ok());
    ASSERT_TRUE(Run(*chunked_kv, 17, kTokens, &chunked, logits).ok());
    // The two steps' row counts may run on different matmul kernels, which add in another
    // order: equal to f32 rounding, relative to each sum's size.
    for (size_t i = 0; i < whole.values.size(); ++i) {
      EXPECT_NEAR(chunked.values[i], whole.values[i],
                  1e-5 * std::max(1.0, std::abs(double{whole.values[i]})))
          << i;
    }
    if (reduce == kernels::ScoreReduce::kMax) {
      // Every entry is seen by at least its own row, so every max is positive.
      for (float p : whole.values) EXPECT_GT(p, 0.0f);
    }
    whole_kv->Release(*pool_);
    chunked_kv->Release(*pool_);
  }
}

TEST_F(ModelScoresTest, CollectingScoresLeavesLogitsUnchanged) {
  auto plain_kv = NewSequence();
  StepLogits plain;
  ASSERT_TRUE(Run(*plain_kv, 0, kTokens, nullptr, plain).ok());
  auto scored_kv = NewSequence();
  StepScores scores = NewScores(kernels::ScoreReduce::kMax);
  StepLogits scored;
  ASSERT_TRUE(Run(*scored_kv, 0, kTokens, &scores, scored).ok());
  EXPECT_EQ(plain.values, scored.values);
}

TEST_F(ModelScoresTest, ScoresThatDoNotCoverTheEntriesAreRefused) {
  auto kv = NewSequence();
  StepScores scores = NewScores(kernels::ScoreReduce::kMax);
  scores.stride = kTokens - 1;  // too short for the step's entries
  scores.values.resize(scores.values.size() / kTokens * (kTokens - 1));
  StepLogits logits;
  const absl::Status status = Run(*kv, 0, kTokens, &scores, logits);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_EQ(kv->next_position(), 0) << "a refused step must not advance the cache";
}

}  // namespace
}  // namespace kvd::engine
