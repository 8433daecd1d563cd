// The speculative decoding benchmark: its question set reader names the line of every fault,
// and a run over the bundled model's documents compares like with like (the same tokens with
// and without drafts, some drafts kept, fewer steps with them).
#include "bench/speculative_bench.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>

#include "bench/speculative_questions.h"
#include "cache_store/kvzip/document_framing.h"
#include "engine/model.h"
#include "kernels/backend.h"
#include "tests/unit/cache_store/key_value_documents.h"
#include "tests/unit/engine/reference_model.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace kvd::bench {
namespace {

using ::testing::HasSubstr;

TEST(SpeculativeQuestionsTest, ReadsDocumentsAndTheirPromptsAndNamesTheLineOfAFault) {
  const auto read = ParseSpeculativeQuestions(
      R"({"id": 0, "doc": "a: 1", "queries": [{"prompt": "Q: a", "answer": "1"}]})"
      "\n\n"
      R"({"doc": "b: 2", "queries": [{"prompt": "Q: b"}, {"prompt": "Q: c"}]})"
      "\n",
      10);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ((*read)[1].document, "b: 2");
  EXPECT_EQ((*read)[1].questions, (std::vector<std::string>{"Q: b", "Q: c"}));
  EXPECT_EQ(ParseSpeculativeQuestions(R"({"doc": "a", "queries": [{"prompt": "x"}]})"
                                      "\n"
                                      R"({"doc": "b", "queries": [{"prompt": "y"}]})",
                                      1)
                ->size(),
            1u);
  const std::pair<std::string, std::string> faults[] = {
      {"{\"doc\": \"a\", \"queries\": [{\"prompt\": \"x\"}]}\n[1]", "line 2: not a JSON object"},
      {"{\"doc\": \"\", \"queries\": [{\"prompt\": \"x\"}]}", "line 1: 'doc' must be"},
      {"{\"doc\": \"a\", \"queries\": []}", "line 1: 'queries' must be"},
      {"{\"doc\": \"a\", \"queries\": [{\"prompt\": 3}]}", "line 1: every query"},
      {"{\"doc\": \"a\", \"queries\": [\"x\"]}", "line 1: every query"},
      {"{\"doc\": \"a\",", "line 1: the line is not valid JSON"},
      {std::string(20, '[') + std::string(20, ']'), "deeper than 8"},
  };
  for (const auto& [text, error] : faults) {
    const auto result = ParseSpeculativeQuestions(text, 10);
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(std::string(result.status().message()), HasSubstr(error)) << text;
  }
}

TEST(SpeculativeBenchTest, QuestionsAboutStoredDocumentsGetTheSameAnswersInFewerSteps) {
  auto backend = kernels::CreateBackend("cpu", {.num_threads = 2});
  ASSERT_TRUE(backend.ok()) << backend.status();
  const auto dir = engine::testing::BundledModelDir();
  auto model = engine::Model::Load(dir, **backend);
  ASSERT_TRUE(model.ok()) << model.status();
  auto tokenizer = text::Tokenizer::FromFile(dir / "tokenizer.json");
  ASSERT_TRUE(tokenizer.ok());
  auto chat_template = text::ChatTemplate::FromTokenizerConfig(dir);
  ASSERT_TRUE(chat_template.ok());
  const cache_store::DocumentFraming framing;
  SpeculativeBenchOptions options;
  options.pipeline = {&framing, chat_template->get(), tokenizer->get()};
  auto prompts = cache_store::PrepareDocumentPrompts(options.pipeline);
  ASSERT_TRUE(prompts.ok()) << prompts.status();
  options.prompts = &*prompts;
  std::mt19937 random(11);
  for (int d = 0; d < 2; ++d) {
    const auto document = cache_store::testing::MakeKeyValueDocument(random, 500);
    SpeculativeQuestions questions{.document = document.text};
    for (const auto& [key, value] : document.records) questions.questions.push_back("Q:" + key);
    options.documents.push_back(std::move(questions));
  }
  options.max_tokens = 12;
  options.batch_sizes = {1, 4};
  options.rounds = 1;
  options.speculative.prompt_lookup_min = 1;
  auto results = MeasureSpeculativeDecoding(**model, options);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 4u);  // two batch sizes, each without and with drafts
  for (size_t i = 0; i < results->size(); i += 2) {
    const SpeculativeBenchResult& plain = (*results)[i];
    const SpeculativeBenchResult& drafted = (*results)[i + 1];
    EXPECT_FALSE(plain.speculative);
    EXPECT_TRUE(drafted.speculative);
    EXPECT_TRUE(drafted.same_tokens);
    EXPECT_EQ(drafted.tokens, plain.tokens);
    EXPECT_GT(drafted.accepted_fraction, 0.0);
    EXPECT_LT(drafted.steps, plain.steps);
    EXPECT_GT(drafted.decode_tokens_per_second, 0.0);
  }
}

}  // namespace
}  // namespace kvd::bench
