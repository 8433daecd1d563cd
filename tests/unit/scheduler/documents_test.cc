// Documents in the scheduler: compressions run in the steps beside live decodes without
// stalling them, their caches answer as the full prompt does, concurrent questions share one
// copy of the blocks, idle documents give way under pressure, and cancellation frees blocks.
#include <gtest/gtest.h>

#include "cache_store/kvzip/document_compressor.h"
#include "cache_store/kvzip/document_kv.h"
#include "scheduler_fixture.h"
#include "tests/unit/cache_store/key_value_documents.h"
#include "tests/unit/scheduler/draft_model_dir.h"
#include "text/chat_template.h"

namespace kvd::scheduler {
namespace {

using testing::Outcome;

class DocumentsTest : public testing::SchedulerTest {
 protected:
  void SetUp() override {
    const auto dir = engine::testing::BundledModelDir();
    chat_template_ = *text::ChatTemplate::FromTokenizerConfig(dir);
    const cache_store::DocumentPipeline pipeline{&framing_, chat_template_.get(), tokenizer_};
    prompts_ = *cache_store::PrepareDocumentPrompts(pipeline);
    std::mt19937 random(42);
    document_ = cache_store::testing::MakeKeyValueDocument(random, 600);
    input_ = *cache_store::PrepareDocument(pipeline, document_.text);
  }

  std::unique_ptr<cache_store::DocumentCompressor> Compressor(cache_store::CompressionSpec spec) {
    return *cache_store::DocumentCompressor::Create(model_->config(), input_, prompts_, {}, spec);
  }
  // Compresses the document on `scheduler`, stepping it until the result is ready.
  cache_store::DocumentPayload Compress(Scheduler& scheduler, cache_store::CompressionSpec spec) {
    auto handle = scheduler.SubmitCompression(Compressor(spec));
    EXPECT_TRUE(handle.ok()) << handle.status();
    RunUntilIdle(scheduler);
    auto result = handle->TakeResult(absl::ZeroDuration());
    EXPECT_TRUE(result.has_value() && result->ok());
    return **std::move(result);
  }
  std::vector<int32_t> Question(const std::string& key) const {
    return cache_store::QuestionTokens(*tokenizer_, prompts_, "Q:" + key);
  }
  Request Ask(const std::shared_ptr<const cache_store::DocumentPayload>& payload,
              const std::string& key) const {
    Request request = Greedy(Question(key), 8);
    request.ignore_eos = false;
    request.document = DocumentPrefix{"tenant/doc", payload};
    return request;
  }
  Request AskWithFullPrompt(const std::string& key) const {
    std::vector<int32_t> prompt = input_.prefix_ids;
    prompt.insert(prompt.end(), input_.document_ids.begin(), input_.document_ids.end());
    const std::vector<int32_t> question = Question(key);
    prompt.insert(prompt.end(), question.begin(), question.end());
    Request request = Greedy(std::move(prompt), 8);
    request.ignore_eos = false;
    return request;
  }

  const cache_store::DocumentFraming framing_{};  // chat, the user turn
  std::unique_ptr<text::ChatTemplate> chat_template_;
  cache_store::DocumentPrompts prompts_;
  cache_store::testing::KeyValueDocument document_;
  cache_store::DocumentInput input_;
};

TEST_F(DocumentsTest, CompressionInterleavesWithDecodesAndNeverStallsThem) {
  SchedulerConfig config = SmallConfig();
  config.max_num_seqs = 8;
  config.max_num_batched_tokens = 64;
  config.compression_tokens_per_step = 16;
  auto scheduler = NewScheduler(config);
  std::mt19937 random(1);
  auto live = scheduler->Submit(Greedy(RandomPrompt(random, 20), 200));
  ASSERT_TRUE(live.ok());
  ASSERT_TRUE(scheduler->Step().ok());  // the live request's prompt
  auto handle = scheduler->SubmitCompression(
      Compressor({.method = cache_store::CompressionMethod::kKvzip, .ratio = 0.3}));
  ASSERT_TRUE(handle.ok()) << handle.status();
  double progress = 0.0;
  int32_t compression_steps = 0;
  std::optional<absl::StatusOr<cache_store::DocumentPayload>> result;
  while (!(result = handle->TakeResult(absl::ZeroDuration()))) {
    auto report = scheduler->Step();
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(report->num_decode_tokens, 1) << "the live decode must run every step";
    EXPECT_GT(report->num_compression_tokens, 0);
    EXPECT_LE(report->num_compression_tokens, config.max_num_batched_tokens - 1);
    EXPECT_GE(handle->progress(), progress);
    progress = handle->progress();
    ++compression_steps;
  }
  ASSERT_TRUE(result->ok()) << result->status();
  EXPECT_EQ(handle->progress(), 1.0);
  EXPECT_GT(compression_steps, 3) << "the work should span several steps";
  live->Cancel();
  RunUntilIdle(*scheduler);
  EXPECT_EQ(scheduler->Metrics().kv_blocks_free, scheduler->Metrics().kv_blocks_total);
}

TEST_F(DocumentsTest, StoredCacheAnswersConcurrentQuestionsAsTheFullPromptDoes) {
  SchedulerConfig config = SmallConfig();
  config.prefix_cache.enabled = false;  // each full prompt is computed whole
  auto scheduler = NewScheduler(config);
  auto payload = std::make_shared<const cache_store::DocumentPayload>(
      Compress(*scheduler, {.method = cache_store::CompressionMethod::kNone}));
  std::vector<RequestHandle> with_document, full_prompt;
  for (const auto& [key, value] : document_.records) {
    with_document.push_back(*scheduler->Submit(Ask(payload, key)));
    full_prompt.push_back(*scheduler->Submit(AskWithFullPrompt(key)));
  }
  RunUntilIdle(*scheduler);
  for (size_t i = 0; i < with_document.size(); ++i) {
    Outcome stored, full;
    testing::Drain(with_document[i], stored);
    testing::Drain(full_prompt[i], full);
    ASSERT_TRUE(stored.ended && stored.status.ok()) << stored.status;
    EXPECT_EQ(stored.tokens, full.tokens) << document_.records[i].first;
    EXPECT_EQ(stored.usage.prompt_tokens, full.usage.prompt_tokens);
    EXPECT_EQ(stored.usage.cached_tokens, input_.length());
    EXPECT_EQ(full.usage.cached_tokens, 0);
  }
}

// Answers copy the document's values, which the document's own token ids draft: fewer steps,
// the same answers.
// Drafted from the document's n-grams, or by a draft model that reads the document's tokens
// before the question (the served model reads its stored cache).
TEST_F(DocumentsTest, DraftsFromTheDocumentsTokensLeaveAnswersUnchanged) {
  SchedulerConfig plain = SmallConfig();
  SchedulerConfig ngram = plain;
  ngram.speculative = {.method = SpeculativeMethod::kNgram,
                       .num_speculative_tokens = 6,
                       .prompt_lookup_min = 2,
                       .prompt_lookup_max = 4};
  SchedulerConfig draft_model = plain;
  draft_model.speculative = {.method = SpeculativeMethod::kDraftModel,
                             .num_speculative_tokens = 4,
                             .model = testing::TinyDraftModelDir().string()};
  std::vector<std::vector<std::vector<int32_t>>> answers;
  std::vector<MetricsSnapshot> metrics;
  for (const SchedulerConfig& config : {plain, ngram, draft_model}) {
    auto scheduler = NewScheduler(config);
    auto payload = std::make_shared<const cache_store::DocumentPayload>(
        Compress(*scheduler, {.method = cache_store::CompressionMethod::kKvzip, .ratio = 0.5}));
    std::vector<RequestHandle> handles;
    for (const auto& [key, value] : document_.records) {
      Request request = Ask(payload, key);
      request.max_tokens = 24;
      handles.push_back(*scheduler->Submit(std::move(request)));
    }
    RunUntilIdle(*scheduler);
    answers.emplace_back();
    for (RequestHandle& handle : handles) {
      Outcome outcome;
      testing::Drain(handle, outcome);
      ASSERT_TRUE(outcome.ended && outcome.status.ok()) << outcome.status;
      answers.back().push_back(outcome.tokens[0]);
    }
    metrics.push_back(scheduler->Metrics());
  }
  for (size_t drafted = 1; drafted < answers.size(); ++drafted) {
    EXPECT_EQ(answers[0], answers[drafted]);
    EXPECT_GT(metrics[drafted].spec_decode_accepted_tokens, 0u);
    EXPECT_LT(metrics[drafted].steps, metrics[0].steps);
  }
}

// A payload's token ids are drafted only where the model has them: ids beyond the vocabulary
// (a payload made for another tokenizer of the same geometry) end a draft, they fail nothing.
TEST_F(DocumentsTest, DraftsStopBeforeIdsOutsideTheVocabulary) {
  SchedulerConfig ngram = SmallConfig();
  ngram.speculative = {.method = SpeculativeMethod::kNgram, .prompt_lookup_min = 1};
  // A draft model reads such a document only up to its first id outside the vocabulary, and
  // still drafts for every question.
  SchedulerConfig draft_model = SmallConfig();
  draft_model.speculative = {.method = SpeculativeMethod::kDraftModel,
                             .model = testing::TinyDraftModelDir().string()};
  for (const SchedulerConfig& speculative : {ngram, draft_model}) {
    SCOPED_TRACE(speculative.speculative.model);
    auto scheduler = NewScheduler(speculative);
    cache_store::DocumentPayload payload =
        Compress(*scheduler, {.method = cache_store::CompressionMethod::kNone});
    const int32_t vocab_size = model_->config().vocab_size;
    for (size_t i = 1; i < payload.prefix_token_ids.size(); i += 2) {
      payload.prefix_token_ids[i] += vocab_size;
    }
    auto shared = std::make_shared<const cache_store::DocumentPayload>(std::move(payload));
    std::vector<RequestHandle> handles;
    for (const auto& [key, value] : document_.records) {
      Request request = Ask(shared, key);
      request.ignore_eos = true;
      request.max_tokens = 16;
      handles.push_back(*scheduler->Submit(std::move(request)));
    }
    RunUntilIdle(*scheduler);
    for (RequestHandle& handle : handles) {
      Outcome outcome;
      testing::Drain(handle, outcome);
      EXPECT_TRUE(outcome.ended && outcome.status.ok()) << outcome.status;
    }
    if (!speculative.speculative.model.empty()) {
      EXPECT_GT(scheduler->Metrics().spec_decode_draft_tokens, 0u);
    }
  }
}

TEST_F(DocumentsTest, ConcurrentQuestionsShareOneCopyOfTheDocument) {
  auto scheduler = NewScheduler(SmallConfig());
  auto payload = std::make_shared<const cache_store::DocumentPayload>(
      Compress(*scheduler, {.method = cache_store::CompressionMethod::kNone}));
  const int64_t document_blocks = cache_store::DocumentBlocks(*payload, 16);
  std::vector<RequestHandle> handles;
  for (int i = 0; i < 6; ++i) handles.push_back(*scheduler->Submit(Ask(payload, "bab")));
  ASSERT_TRUE(scheduler->Step().ok());
  const MetricsSnapshot metrics = scheduler->Metrics();
  EXPECT_EQ(metrics.num_running, 6);
  const int64_t used = metrics.kv_blocks_total - metrics.kv_blocks_free;
  // One copy of the document plus each question's own blocks (and copies of partial blocks).
  EXPECT_LT(used, 2 * document_blocks) << "questions must share the document's blocks";
  EXPECT_GE(used, document_blocks);
  RunUntilIdle(*scheduler);
}

TEST_F(DocumentsTest, KeepKvQuestionsMergeOnlyTheirOwnEntries) {
  auto scheduler = NewScheduler(SmallConfig());
  auto payload = std::make_shared<const cache_store::DocumentPayload>(
      Compress(*scheduler, {.method = cache_store::CompressionMethod::kNone}));
  // Plain questions, alone: the reference answers over the untouched document.
  std::vector<Outcome> reference;
  for (const auto& [key, value] : document_.records) {
    auto handle = scheduler->Submit(Ask(payload, key));
    RunUntilIdle(*scheduler);
    testing::Drain(*handle, reference.emplace_back());
  }
  // The same questions, each beside a bounded one that shares the document's blocks and merges
  // its own entries down to 4 per (layer, kv head) (nothing of its own is protected).
  std::vector<RequestHandle> plain, bounded;
  for (const auto& [key, value] : document_.records) {
    Request request = Ask(payload, key);
    request.max_tokens = 24;
    request.ignore_eos = true;
    cache_store::KeepKvParams params;
    params.budget.tokens = 4;
    params.recent = 0;
    params.sink = 0;
    request.keepkv = params;
    bounded.push_back(*scheduler->Submit(request));
    plain.push_back(*scheduler->Submit(Ask(payload, key)));
  }
  RunUntilIdle(*scheduler);
  for (size_t i = 0; i < plain.size(); ++i) {
    Outcome answer, merged;
    testing::Drain(plain[i], answer);
    testing::Drain(bounded[i], merged);
    ASSERT_TRUE(merged.ended && merged.status.ok()) << merged.status;
    EXPECT_EQ(merged.tokens[0].size(), 24u);
    EXPECT_EQ(answer.tokens, reference[i].tokens) << document_.records[i].first;
  }
  const MetricsSnapshot metrics = scheduler->Metrics();
  EXPECT_GT(metrics.keepkv_merges + metrics.keepkv_evictions, 0u);
  // Asked again afterwards, the document still answers as before.
  auto again = scheduler->Submit(Ask(payload, document_.records[0].first));
  RunUntilIdle(*scheduler);
  Outcome repeated;
  testing::Drain(*again, repeated);
  EXPECT_EQ(repeated.tokens, reference[0].tokens);
}

// Also with a draft model, whose caches of the documents (half a document each: two of four
// layers) take only blocks nothing else needs.
TEST_F(DocumentsTest, IdleDocumentsGiveWayWhenBlocksRunShort) {
  SchedulerConfig config = SmallConfig();
  auto probe = NewScheduler(config);
  auto payload = std::make_shared<const cache_store::DocumentPayload>(
      Compress(*probe, {.method = cache_store::CompressionMethod::kNone}));
  // Room for one document and a question, not for two documents.
  config.kv_cache_bytes = KvBytesForTokens(input_.length() * 3 / 2);
  SchedulerConfig drafting = config;
  drafting.speculative = {.method = SpeculativeMethod::kDraftModel,
                          .model = testing::TinyDraftModelDir().string()};
  for (const SchedulerConfig& each : {config, drafting}) {
    SCOPED_TRACE(each.speculative.model);
    auto scheduler = NewScheduler(each);
    for (const char* key : {"first", "second", "first"}) {
      Request request = Ask(payload, document_.records[0].first);
      request.document->key = key;
      auto handle = scheduler->Submit(std::move(request));
      ASSERT_TRUE(handle.ok()) << handle.status();
      RunUntilIdle(*scheduler);
      Outcome outcome;
      testing::Drain(*handle, outcome);
      EXPECT_TRUE(outcome.ended && outcome.status.ok()) << key << ": " << outcome.status;
      EXPECT_EQ(outcome.text[0], document_.records[0].second) << key;
    }
  }
}

TEST_F(DocumentsTest, CompressionsRunOneAtATimeInArrivalOrder) {
  auto scheduler = NewScheduler(SmallConfig());
  auto first = scheduler->SubmitCompression(
      Compressor({.method = cache_store::CompressionMethod::kKvzip, .ratio = 0.3}));
  auto second = scheduler->SubmitCompression(
      Compressor({.method = cache_store::CompressionMethod::kKvzip, .ratio = 0.3}));
  ASSERT_TRUE(first.ok() && second.ok());
  std::optional<absl::StatusOr<cache_store::DocumentPayload>> first_result;
  while (!(first_result = first->TakeResult(absl::ZeroDuration()))) {
    ASSERT_TRUE(scheduler->Step().ok());
    EXPECT_EQ(second->progress(), 0.0) << "the second starts only when the first ends";
  }
  ASSERT_TRUE(first_result->ok()) << first_result->status();
  RunUntilIdle(*scheduler);
  auto second_result = second->TakeResult(absl::ZeroDuration());
  ASSERT_TRUE(second_result.has_value() && second_result->ok());
  EXPECT_EQ(**second_result, **first_result) << "the same document compresses the same way";
}

TEST_F(DocumentsTest, CancelledCompressionFreesItsBlocks) {
  auto scheduler = NewScheduler(SmallConfig());
  auto handle = scheduler->SubmitCompression(
      Compressor({.method = cache_store::CompressionMethod::kKvzip, .ratio = 0.5}));
  ASSERT_TRUE(handle.ok());
  ASSERT_TRUE(scheduler->Step().ok());
  EXPECT_LT(scheduler->Metrics().kv_blocks_free, scheduler->Metrics().kv_blocks_total);
  handle->Cancel();
  RunUntilIdle(*scheduler);
  ASSERT_TRUE(scheduler->Step().ok());
  EXPECT_EQ(scheduler->Metrics().kv_blocks_free, scheduler->Metrics().kv_blocks_total);
  auto result = handle->TakeResult(absl::ZeroDuration());
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->status().code(), absl::StatusCode::kCancelled);
}

TEST_F(DocumentsTest, RefusesWorkTheCacheCanNeverHold) {
  SchedulerConfig config = SmallConfig();
  config.kv_cache_bytes = KvBytesForTokens(input_.length() / 2);
  auto scheduler = NewScheduler(config);
  auto handle = scheduler->SubmitCompression(
      Compressor({.method = cache_store::CompressionMethod::kKvzip, .ratio = 0.5}));
  EXPECT_EQ(handle.status().code(), absl::StatusCode::kInvalidArgument) << handle.status();

  auto big = NewScheduler(SmallConfig());
  auto payload = std::make_shared<const cache_store::DocumentPayload>(
      Compress(*big, {.method = cache_store::CompressionMethod::kNone}));
  auto question = scheduler->Submit(Ask(payload, "bab"));
  EXPECT_EQ(question.status().code(), absl::StatusCode::kInvalidArgument) << question.status();
  Request long_answer = Ask(payload, "bab");
  long_answer.max_tokens = model_->config().max_position_embeddings;
  EXPECT_EQ(big->Submit(std::move(long_answer)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A request that runs out of blocks while a compression holds them waits for the compression to
// end, then recomputes and finishes: it does not fill the cache alone, so its answer is whole.
TEST_F(DocumentsTest, ARequestShortOfBlocksAnACompressionHoldsWaitsForThem) {
  const cache_store::CompressionSpec spec{.method = cache_store::CompressionMethod::kKvzip,
                                          .ratio = 0.3};
  const int64_t peak = Compressor(spec)->PeakBlocks(16);
  const auto& model = model_->config();
  SchedulerConfig config = SmallConfig();
  config.max_num_seqs = 8;
  config.max_num_batched_tokens = 16;
  config.compression_tokens_per_step = 4;
  const int64_t blocks_per_token_block = int64_t{model.num_layers} * model.num_kv_heads;
  // Room for the compression's peak and 32 tokens of the request: it fits alone, not beside it.
  config.kv_cache_bytes = static_cast<size_t>(peak + 2 * blocks_per_token_block) *
                          engine::KvBlockPool::BlockBytes(16, model.head_dim, kernels::DType::kF32);
  std::mt19937 random(5);
  const Request request = Greedy(RandomPrompt(random, 20), 150);

  auto alone = NewScheduler(config);
  auto reference = alone->Submit(request);
  ASSERT_TRUE(reference.ok()) << reference.status();
  RunUntilIdle(*alone);
  Outcome expected;
  testing::Drain(*reference, expected);
  ASSERT_EQ(expected.tokens.size(), 1u);
  ASSERT_EQ(expected.tokens[0].size(), 150u) << "the request fits the cache alone";

  auto scheduler = NewScheduler(config);
  auto live = scheduler->Submit(request);
  ASSERT_TRUE(live.ok()) << live.status();
  ASSERT_TRUE(scheduler->Step().ok());  // the request's prompt
  auto compression = scheduler->SubmitCompression(Compressor(spec));
  ASSERT_TRUE(compression.ok()) << compression.status();
  // Another upload once the request waits: it starts only when the request has ended, so the
  // request is preempted once, not once per upload.
  std::optional<CompressionHandle> second;
  int32_t preemptions = 0;
  for (int32_t step = 0; step < 5000 && scheduler->HasWork(); ++step) {
    auto report = scheduler->Step();
    ASSERT_TRUE(report.ok()) << report.status();
    preemptions += static_cast<int32_t>(report->preempted.size());
    if (preemptions > 0 && !second) {
      auto submitted = scheduler->SubmitCompression(Compressor(spec));
      ASSERT_TRUE(submitted.ok()) << submitted.status();
      second.emplace(*std::move(submitted));
    }
  }
  ASSERT_FALSE(scheduler->HasWork()) << "the request or a compression stalled";
  EXPECT_EQ(preemptions, 1) << "the request should run short of blocks beside the first upload";
  ASSERT_TRUE(second.has_value());
  auto second_result = second->TakeResult(absl::ZeroDuration());
  ASSERT_TRUE(second_result.has_value());
  EXPECT_TRUE(second_result->ok()) << second_result->status();
  Outcome outcome;
  testing::Drain(*live, outcome);
  EXPECT_TRUE(outcome.ended && outcome.status.ok()) << outcome.status;
  EXPECT_EQ(outcome.tokens, expected.tokens) << "the whole answer, as when it runs alone";
  auto result = compression->TakeResult(absl::ZeroDuration());
  ASSERT_TRUE(result.has_value());
  EXPECT_TRUE(result->ok()) << result->status();
  EXPECT_EQ(scheduler->Metrics().kv_blocks_free, scheduler->Metrics().kv_blocks_total);
}

// Cached prompt prefixes no request uses fill the pool as requests come and go; a compression,
// which reserves its blocks as it goes, still gets them.
TEST_F(DocumentsTest, IdleCachedPrefixesMakeWayForACompression) {
  const int64_t peak =
      Compressor({.method = cache_store::CompressionMethod::kKvzip})->PeakBlocks(16);
  const auto& model = model_->config();
  SchedulerConfig config = SmallConfig();
  config.kv_cache_bytes = static_cast<size_t>(peak + peak / 4) *
                          engine::KvBlockPool::BlockBytes(16, model.head_dim, kernels::DType::kF32);
  auto scheduler = NewScheduler(config);
  std::mt19937 random(3);
  for (int32_t i = 0; i < 12; ++i) {
    auto handle = scheduler->Submit(Greedy(RandomPrompt(random, 200), 2));
    ASSERT_TRUE(handle.ok()) << handle.status();
    RunUntilIdle(*scheduler);
  }
  const MetricsSnapshot filled = scheduler->Metrics();
  ASSERT_GT(filled.prefix_cache_blocks, filled.kv_blocks_total / 2) << "the cache should be full";

  auto handle =
      scheduler->SubmitCompression(Compressor({.method = cache_store::CompressionMethod::kKvzip}));
  ASSERT_TRUE(handle.ok()) << handle.status();
  for (int32_t step = 0; step < 1000 && scheduler->HasWork(); ++step) {
    ASSERT_TRUE(scheduler->Step().ok());
  }
  ASSERT_FALSE(scheduler->HasWork()) << "the compression stalled";
  auto result = handle->TakeResult(absl::ZeroDuration());
  ASSERT_TRUE(result.has_value());
  EXPECT_TRUE(result->ok()) << result->status();
}

}  // namespace
}  // namespace kvd::scheduler
