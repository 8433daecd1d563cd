// The engine on the bundled model against logits from its PyTorch implementation: prefill,
// chunked prefill, step-by-step decode, batching, greedy generation, and a bf16 copy.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "bundled_model_fixture.h"
#include "engine/model.h"
#include "engine/safetensors.h"
#include "engine/safetensors_writer.h"
#include "kernels/backend.h"
#include "reference_model.h"
#include "test_checkpoint.h"

namespace kvd::engine {
namespace {

using testing::ReferenceCase;

// max |actual - expected| / max |expected| over one row of logits.
double RelativeError(std::span<const float> actual, const std::vector<float>& expected) {
  double max_diff = 0.0, max_ref = 0.0;
  for (size_t i = 0; i < expected.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(double{actual[i]} - expected[i]));
    max_ref = std::max(max_ref, std::abs(double{expected[i]}));
  }
  return max_diff / max_ref;
}

constexpr double kF32Tolerance = 1e-4;

class ModelReferenceTest : public testing::BundledModelTest<64> {
 protected:
  static void SetUpTestSuite() {
    BundledModelTest::SetUpTestSuite();
    cases_ = new std::vector<ReferenceCase>(testing::LoadReferenceCases());
    ASSERT_GE(cases_->size(), 3u) << "no reference cases in " << testing::BundledModelDir();
  }
  static void TearDownTestSuite() {
    delete cases_;
    BundledModelTest::TearDownTestSuite();
  }
  static std::vector<int32_t> FullSequence(const ReferenceCase& c) {
    std::vector<int32_t> ids = c.input_ids;
    ids.insert(ids.end(), c.greedy_ids.begin(), c.greedy_ids.end() - 1);
    return ids;
  }

  static inline std::vector<ReferenceCase>* cases_ = nullptr;
};

TEST_F(ModelReferenceTest, PrefillLogitsMatchReference) {
  for (const ReferenceCase& c : *cases_) {
    const std::vector<int32_t> ids = FullSequence(c);
    ASSERT_EQ(ids.size(), c.logits.size()) << c.name;
    auto kv = NewSequence(static_cast<int32_t>(ids.size()));
    StepLogits logits;
    const SequenceStep step{kv.get(), ids, LogitRows::kAll};
    ASSERT_TRUE(model_->Forward({&step, 1}, *pool_, logits).ok());
    ASSERT_EQ(logits.rows(), static_cast<int32_t>(ids.size()));
    for (size_t row = 0; row < ids.size(); ++row) {
      EXPECT_LT(RelativeError(logits.row(row), c.logits[row]), kF32Tolerance)
          << c.name << " position " << row;
    }
    kv->Release(*pool_);
  }
}

TEST_F(ModelReferenceTest, StepByStepDecodeMatchesReference) {
  for (const ReferenceCase& c : *cases_) {
    const std::vector<int32_t> ids = FullSequence(c);
    auto kv = NewSequence(static_cast<int32_t>(ids.size()));
    StepLogits logits;
    // Prefill in uneven chunks, then one token per step.
    size_t done = 0;
    for (size_t chunk : {size_t{7}, size_t{1}, size_t{13}}) {
      chunk = std::min(chunk, c.input_ids.size() - done);
      if (chunk == 0) break;
      const SequenceStep step{kv.get(), std::span(ids).subspan(done, chunk), LogitRows::kAll};
      ASSERT_TRUE(model_->Forward({&step, 1}, *pool_, logits).ok());
      for (size_t i = 0; i < chunk; ++i) {
        EXPECT_LT(RelativeError(logits.row(i), c.logits[done + i]), kF32Tolerance)
            << c.name << " chunked position " << done + i;
      }
      done += chunk;
    }
    for (; done < ids.size(); ++done) {
      const SequenceStep step{kv.get(), std::span(ids).subspan(done, 1), LogitRows::kLast};
      ASSERT_TRUE(model_->Forward({&step, 1}, *pool_, logits).ok());
      EXPECT_LT(RelativeError(logits.row(0), c.logits[done]), kF32Tolerance)
          << c.name << " decode position " << done;
    }
    kv->Release(*pool_);
  }
}

TEST_F(ModelReferenceTest, PromptChunkWithoutLogitsReturnsNoRows) {
  const ReferenceCase& c = cases_->front();
  const std::vector<int32_t> ids = FullSequence(c);
  auto kv = NewSequence(static_cast<int32_t>(ids.size()));
  StepLogits logits;
  const size_t head = ids.size() / 2;
  const SequenceStep first{kv.get(), std::span(ids).first(head), LogitRows::kNone};
  ASSERT_TRUE(model_->Forward({&first, 1}, *pool_, logits).ok());
  EXPECT_EQ(logits.rows(), 0);
  const SequenceStep rest{kv.get(), std::span(ids).subspan(head), LogitRows::kLast};
  ASSERT_TRUE(model_->Forward({&rest, 1}, *pool_, logits).ok());
  ASSERT_EQ(logits.rows(), 1);
  EXPECT_LT(RelativeError(logits.row(0), c.logits[ids.size() - 1]), kF32Tolerance);
  kv->Release(*pool_);
}

TEST_F(ModelReferenceTest, BatchedSequencesMatchReference) {
  std::vector<std::vector<int32_t>> ids;
  std::vector<std::unique_ptr<SequenceKv>> kvs;
  std::vector<SequenceStep> steps;
  for (const ReferenceCase& c : *cases_) {
    ids.push_back(FullSequence(c));
    kvs.push_back(NewSequence(static_cast<int32_t>(ids.back().size())));
  }
  for (size_t i = 0; i < ids.size(); ++i)
    steps.push_back({kvs[i].get(), ids[i], i % 2 == 0 ? LogitRows::kAll : LogitRows::kLast});
  StepLogits logits;
  ASSERT_TRUE(model_->Forward(steps, *pool_, logits).ok());
  int32_t row = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto& c = (*cases_)[i];
    const size_t first = steps[i].logits == LogitRows::kAll ? 0 : ids[i].size() - 1;
    for (size_t position = first; position < ids[i].size(); ++position) {
      EXPECT_LT(RelativeError(logits.row(row++), c.logits[position]), kF32Tolerance)
          << c.name << " batched position " << position;
    }
  }
  EXPECT_EQ(row, logits.rows());
  for (auto& kv : kvs) kv->Release(*pool_);
}

// A bf16 copy of the checkpoint loads, stays close to the f32 reference and generates.
TEST_F(ModelReferenceTest, Bf16CopyLoadsAndGenerates) {
  testing::TempDir dir;
  auto checkpoint = Checkpoint::Open(testing::BundledModelDir());
  ASSERT_TRUE(checkpoint.ok());
  auto source = SafetensorsFile::Open(testing::BundledModelDir() / "model.safetensors");
  ASSERT_TRUE(source.ok());
  std::vector<TensorToWrite> tensors;
  for (const auto& [name, info] : (*source)->tensors()) {
    ASSERT_EQ(info.dtype, "F32");
    TensorToWrite tensor{name, "BF16", info.shape, std::vector<uint8_t>(info.num_bytes / 2)};
    const auto* values = static_cast<const float*>(info.data);
    for (size_t i = 0; i < info.num_bytes / 4; ++i) {
      const uint16_t bits = kernels::FloatToBF16(values[i]);
      std::memcpy(tensor.bytes.data() + 2 * i, &bits, 2);
    }
    tensors.push_back(std::move(tensor));
  }
  ASSERT_TRUE(WriteSafetensors(dir.path() / "model.safetensors", tensors).ok());
  for (const char* file : {"config.json", "generation_config.json"}) {
    std::filesystem::copy_file(testing::BundledModelDir() / file, dir.path() / file);
  }
  auto bf16_model = Model::Load(dir.path(), *backend_);
  ASSERT_TRUE(bf16_model.ok()) << bf16_model.status();

  const ReferenceCase& c = cases_->front();
  auto kv = NewSequence(static_cast<int32_t>(c.input_ids.size()));
  StepLogits logits;
  const SequenceStep step{kv.get(), c.input_ids, LogitRows::kLast};
  ASSERT_TRUE((*bf16_model)->Forward({&step, 1}, *pool_, logits).ok());
  EXPECT_LT(RelativeError(logits.row(0), c.logits[c.input_ids.size() - 1]), 0.1);
  kv->Release(*pool_);

  // Greedy decoding on the bf16 copy starts as the f32 reference does.
  auto decode_kv = NewSequence(static_cast<int32_t>(c.input_ids.size()) + 8);
  std::vector<int32_t> next = c.input_ids;
  std::vector<int32_t> generated;
  for (int i = 0; i < 8; ++i) {
    const SequenceStep decode{decode_kv.get(), next, LogitRows::kLast};
    ASSERT_TRUE((*bf16_model)->Forward({&decode, 1}, *pool_, logits).ok());
    const auto row = logits.row(0);
    next = {static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin())};
    generated.push_back(next[0]);
  }
  EXPECT_EQ(generated.front(), c.greedy_ids.front());
  decode_kv->Release(*pool_);
}

TEST_F(ModelReferenceTest, ForwardRejectsBadInputs) {
  auto kv = NewSequence(4);
  StepLogits logits;
  const std::vector<int32_t> bad_token = {model_->config().vocab_size};
  const SequenceStep bad{kv.get(), bad_token, LogitRows::kLast};
  EXPECT_EQ(model_->Forward({&bad, 1}, *pool_, logits).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(kv->next_position(), 0);  // nothing was appended

  SequenceKv unreserved(model_->config().num_layers, model_->config().num_kv_heads);
  const std::vector<int32_t> one = {1};
  const SequenceStep no_blocks{&unreserved, one, LogitRows::kLast};
  EXPECT_EQ(model_->Forward({&no_blocks, 1}, *pool_, logits).code(),
            absl::StatusCode::kFailedPrecondition);
  kv->Release(*pool_);
}

}  // namespace
}  // namespace kvd::engine
