// A step that returns its rows' top logits: the same logits as whole rows would give, sorted
// with their ids, the rows' log-normalizers, and the whole rows still readable afterwards.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "bundled_model_fixture.h"
#include "engine/model.h"

namespace kvd::engine {
namespace {

class ModelTopLogitsTest : public testing::BundledModelTest<16> {
 protected:
  // Three prompts, each sequence's last row asking for logits.
  StepLogits Run(const LogitsRequest& request) {
    const std::vector<std::vector<int32_t>> prompts = {{869, 5, 9, 22}, {869, 40}, {869, 7, 7}};
    std::vector<std::unique_ptr<SequenceKv>> kvs;
    std::vector<SequenceStep> steps;
    for (const auto& prompt : prompts) {
      kvs.push_back(NewSequence(static_cast<int32_t>(prompt.size())));
      steps.push_back({kvs.back().get(), prompt, LogitRows::kLast});
    }
    StepLogits logits;
    const absl::Status status = model_->Forward(steps, *pool_, logits, request);
    EXPECT_TRUE(status.ok()) << status;
    for (auto& kv : kvs) kv->Release(*pool_);
    return logits;
  }
};

TEST_F(ModelTopLogitsTest, TopLogitsAreTheWholeRowsLargestWithTheirNormalizers) {
  const StepLogits whole = Run({});
  const std::vector<float> inverse_temperatures = {1.0f, 2.0f, 0.5f};
  const StepLogits top = Run({.top_k = 16, .inverse_temperatures = inverse_temperatures});
  ASSERT_EQ(whole.rows(), 3);
  ASSERT_EQ(top.rows(), 3);
  ASSERT_EQ(top.top_k, 16);
  EXPECT_TRUE(top.values.empty());
  for (int32_t r = 0; r < 3; ++r) {
    const std::span<const float> row = whole.row(r);
    std::vector<int32_t> order(row.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return row[a] > row[b]; });
    const TopLogits t = top.top(r);
    for (int32_t i = 0; i < 16; ++i) {
      EXPECT_EQ(t.ids[i], order[i]) << "row " << r << ", rank " << i;
      EXPECT_EQ(t.values[i], row[order[i]]) << "row " << r << ", rank " << i;
    }
    const auto log_normalizer = [&](double scale) {
      double total = 0.0;
      for (float logit : row) total += std::exp((logit - row[order[0]]) * scale);
      return std::log(total);
    };
    // Relative to the row's largest logit: in [0, ln vocab].
    EXPECT_NEAR(t.log_normalizer, log_normalizer(1.0), 1e-5);
    EXPECT_NEAR(t.tempered_log_normalizer, log_normalizer(inverse_temperatures[r]), 1e-5);
    EXPECT_EQ(t.vocab_size, model_->config().vocab_size);
  }
  // The whole rows stay readable until the next step.
  std::vector<float> row;
  for (int32_t r = 0; r < 3; ++r) {
    ASSERT_TRUE(model_->CopyLogitsRow(r, row).ok());
    EXPECT_EQ(row, std::vector<float>(whole.row(r).begin(), whole.row(r).end())) << r;
  }
  EXPECT_EQ(model_->CopyLogitsRow(3, row).code(), absl::StatusCode::kOutOfRange);
}

TEST_F(ModelTopLogitsTest, ABadRequestIsRejectedBeforeTheStepRuns) {
  const std::vector<int32_t> prompt = {869, 5, 9};
  auto kv = NewSequence(3);
  const SequenceStep step{kv.get(), prompt, LogitRows::kLast};
  StepLogits logits;
  for (const LogitsRequest& request :
       {LogitsRequest{.top_k = kernels::kMaxTopLogits + 1, .inverse_temperatures = {1.0f}},
        LogitsRequest{.top_k = 4, .inverse_temperatures = {1.0f, 1.0f}},
        LogitsRequest{.top_k = -1, .inverse_temperatures = {1.0f}}}) {
    EXPECT_EQ(model_->Forward({&step, 1}, *pool_, logits, request).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(kv->next_position(), 0);
  }
  kv->Release(*pool_);
}

}  // namespace
}  // namespace kvd::engine
