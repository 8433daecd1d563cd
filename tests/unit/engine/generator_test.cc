#include "engine/generator.h"

#include <gtest/gtest.h>

#include "kernels/backend.h"
#include "test_checkpoint.h"

namespace kvd::engine {
namespace {

constexpr int32_t kEos = 1;  // TinyConfig's eos_token_id

class GeneratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteTinyModel(dir_.path());
    auto model = Model::Load(dir_.path(), *backend_);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *std::move(model);
    auto pool = KvBlockPool::Create(*backend_, {.num_blocks = 64, .block_size = 4, .head_dim = 8});
    ASSERT_TRUE(pool.ok());
    pool_ = *std::move(pool);
  }

  struct Outcome {
    absl::Status status;
    std::vector<std::vector<int32_t>> tokens;
    std::vector<FinishReason> reasons;
  };
  Outcome Run(const std::vector<GenerationRequest>& requests, int32_t stop_after = -1) {
    Outcome outcome;
    outcome.tokens.resize(requests.size());
    outcome.reasons.resize(requests.size());
    Generator generator(*model_, *pool_);
    outcome.status = generator.Run(requests, [&](const GenerationEvent& event) {
      outcome.tokens[event.sequence].push_back(event.sampled.token);
      if (event.finished) outcome.reasons[event.sequence] = event.finish_reason;
      return stop_after < 0 ||
             static_cast<int32_t>(outcome.tokens[event.sequence].size()) < stop_after;
    });
    EXPECT_EQ(pool_->num_free_blocks(), pool_->num_blocks()) << "blocks leaked";
    return outcome;
  }
  static GenerationRequest Greedy(int32_t max_tokens) {
    return {.prompt = {0, 5, 9, 12}, .sampling = {.temperature = 0.0f}, .max_tokens = max_tokens};
  }

  testing::TempDir dir_;
  std::unique_ptr<kernels::Backend> backend_ = *kernels::CreateBackend("cpu", {.num_threads = 1});
  std::unique_ptr<Model> model_;
  std::unique_ptr<KvBlockPool> pool_;
};

TEST_F(GeneratorTest, StopsAtMaxTokensWithLengthReason) {
  auto request = Greedy(6);
  request.ignore_eos = true;
  const Outcome outcome = Run({request, request});
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_EQ(outcome.tokens[0].size(), 6u);
  EXPECT_EQ(outcome.tokens[0], outcome.tokens[1]);  // batched sequences do not interfere
  EXPECT_EQ(outcome.reasons[0], FinishReason::kLength);
}

TEST_F(GeneratorTest, EndOfSequenceStopsUnlessIgnoredOrBeforeMinTokens) {
  auto request = Greedy(10);
  request.sampling.logit_bias = {{kEos, 100.0f}};
  Outcome outcome = Run({request});
  EXPECT_EQ(outcome.tokens[0], std::vector<int32_t>{kEos});
  EXPECT_EQ(outcome.reasons[0], FinishReason::kStop);

  request.min_tokens = 3;
  outcome = Run({request});
  ASSERT_EQ(outcome.tokens[0].size(), 4u);
  EXPECT_NE(outcome.tokens[0][2], kEos);
  EXPECT_EQ(outcome.tokens[0][3], kEos);

  request.min_tokens = 0;
  request.ignore_eos = true;
  outcome = Run({request});
  EXPECT_EQ(outcome.tokens[0].size(), 10u);
  EXPECT_EQ(outcome.reasons[0], FinishReason::kLength);
}

TEST_F(GeneratorTest, StopTokenIdsEndTheSequence) {
  auto request = Greedy(10);
  request.sampling.logit_bias = {{7, 100.0f}};
  request.stop_token_ids = {7};
  const Outcome outcome = Run({request});
  EXPECT_EQ(outcome.tokens[0], std::vector<int32_t>{7});
  EXPECT_EQ(outcome.reasons[0], FinishReason::kStop);
}

TEST_F(GeneratorTest, CallbackCanStopASequence) {
  auto request = Greedy(10);
  request.ignore_eos = true;
  const Outcome outcome = Run({request}, /*stop_after=*/3);
  ASSERT_TRUE(outcome.status.ok());
  EXPECT_EQ(outcome.tokens[0].size(), 3u);
}

TEST_F(GeneratorTest, BadRequestsAreErrorsAndLeakNothing) {
  EXPECT_EQ(Run({GenerationRequest{.prompt = {}}}).status.code(),
            absl::StatusCode::kInvalidArgument);
  auto too_long = Greedy(200);  // the tiny model's context is 128
  EXPECT_EQ(Run({too_long}).status.code(), absl::StatusCode::kInvalidArgument);
  auto bad_sampling = Greedy(2);
  bad_sampling.sampling.top_p = 2.0f;
  EXPECT_EQ(Run({bad_sampling}).status.code(), absl::StatusCode::kInvalidArgument);
  auto bad_token = Greedy(2);
  bad_token.prompt = {0, 999};
  EXPECT_EQ(Run({bad_token}).status.code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(GeneratorTest, PoolExhaustionIsResourceExhausted) {
  auto request = Greedy(100);
  request.ignore_eos = true;
  // 104 entries × 2 layers × 2 heads need 104 blocks of 4; the pool has 64.
  const Outcome outcome = Run({request});
  EXPECT_EQ(outcome.status.code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace kvd::engine
