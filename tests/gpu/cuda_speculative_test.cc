// Speculative decoding on the CUDA backend: a scheduler on the device verifies n-gram drafts or
// a draft model's (several logit rows of one sequence in a step; the draft model's steps on the
// device too) and rolls back the refused drafts' entries,
// and every question about a document gets, token for token, the answer it gets without drafts,
// with drafts both kept and refused. Skipped without a device.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/derived_model.h"
#include "engine/model.h"
#include "kernels/backend.h"
#include "scheduler/scheduler.h"
#include "tests/unit/cache_store/key_value_documents.h"
#include "tests/unit/engine/reference_model.h"
#include "text/tokenizer.h"

namespace kvd::scheduler {
namespace {

struct Served {
  std::vector<std::vector<int32_t>> tokens;  // per request
  MetricsSnapshot metrics;
};

Served Serve(engine::Model& model, const text::Tokenizer& tokenizer, const SchedulerConfig& config,
             const std::vector<Request>& requests) {
  auto scheduler = Scheduler::Create(model, &tokenizer, config);
  EXPECT_TRUE(scheduler.ok()) << scheduler.status();
  std::vector<RequestHandle> handles;
  for (const Request& request : requests) handles.push_back(*(*scheduler)->Submit(request));
  Served served;
  served.tokens.resize(requests.size());
  while ((*scheduler)->HasWork()) {
    auto step = (*scheduler)->Step();
    EXPECT_TRUE(step.ok()) << step.status();
    if (!step.ok()) break;
  }
  for (size_t i = 0; i < handles.size(); ++i) {
    while (auto event = handles[i].Next(absl::ZeroDuration())) {
      EXPECT_TRUE(event->status.ok()) << event->status;
      served.tokens[i].insert(served.tokens[i].end(), event->token_ids.begin(),
                              event->token_ids.end());
    }
  }
  served.metrics = (*scheduler)->Metrics();
  return served;
}

// Greedy questions about documents, as the bundled model was trained to answer.
std::vector<Request> Questions(const text::Tokenizer& tokenizer) {
  std::mt19937 random(5);
  std::vector<Request> requests;
  for (int32_t i = 0; i < 16; ++i) {
    const auto document = cache_store::testing::MakeKeyValueDocument(random, 400);
    const std::string& key =
        document.records[static_cast<size_t>(i) % document.records.size()].first;
    Request request;
    request.prompt = tokenizer.Encode(
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n" + document.text +
            "\n\nQ:" + key + "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
        /*add_special_tokens=*/false);
    request.sampling.temperature = 0.0f;
    request.max_tokens = 12;
    requests.push_back(std::move(request));
  }
  return requests;
}

// Served without drafts and with `drafting`: the same tokens, drafts kept and refused, fewer
// steps, no block left behind.
void ExpectSameAnswers(const SpeculativeConfig& drafting) {
  auto backend = kernels::CreateBackend("cuda", {});
  if (!backend.ok()) GTEST_SKIP() << backend.status();
  const auto dir = engine::testing::BundledModelDir();
  auto model = engine::Model::Load(dir, **backend);
  ASSERT_TRUE(model.ok()) << model.status();
  auto tokenizer = text::Tokenizer::FromFile(dir / "tokenizer.json");
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const std::vector<Request> requests = Questions(**tokenizer);
  SchedulerConfig plain;
  plain.kv_cache_bytes = size_t{64} << 20;
  SchedulerConfig speculative = plain;
  speculative.speculative = drafting;
  const Served without = Serve(**model, **tokenizer, plain, requests);
  const Served with = Serve(**model, **tokenizer, speculative, requests);
  EXPECT_EQ(with.tokens, without.tokens);
  EXPECT_GT(with.metrics.spec_decode_accepted_tokens, 0u);
  EXPECT_GT(with.metrics.spec_decode_draft_tokens, with.metrics.spec_decode_accepted_tokens);
  EXPECT_LT(with.metrics.steps, without.metrics.steps);
  EXPECT_EQ(with.metrics.kv_blocks_free, with.metrics.kv_blocks_total);
  EXPECT_TRUE((*backend)->TakeError().ok());
}

TEST(CudaSpeculativeTest, DraftsVerifiedOnTheDeviceLeaveEveryAnswerUnchanged) {
  ExpectSameAnswers({.method = SpeculativeMethod::kNgram});
}

// A draft model on the device beside the served one, its entries in the same pool.
TEST(CudaSpeculativeTest, ADraftModelOnTheDeviceLeavesEveryAnswerUnchanged) {
  const std::filesystem::path draft =
      std::filesystem::path(::testing::TempDir()) / "kvd-tiny-first-2-layers";
  ASSERT_TRUE(engine::WriteLayerPrefixModel(engine::testing::BundledModelDir(), draft, 2).ok());
  ExpectSameAnswers({.method = SpeculativeMethod::kDraftModel, .model = draft.string()});
}

}  // namespace
}  // namespace kvd::scheduler
