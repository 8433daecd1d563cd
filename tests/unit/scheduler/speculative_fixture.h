// The speculative decoding tests' fixture: the same requests run with and without drafts, and
// the prompts whose continuations have something to copy.
#pragma once

#include <gtest/gtest.h>

#include <random>

#include "structured/json_schema_grammar.h"
#include "tests/unit/cache_store/key_value_documents.h"
#include "tests/unit/scheduler/draft_model_dir.h"
#include "tests/unit/scheduler/scheduler_fixture.h"

namespace kvd::scheduler::testing {

struct Results {
  std::vector<Outcome> outcomes;
  MetricsSnapshot metrics;
};

class SpeculativeTest : public SchedulerTest {
 protected:
  SchedulerConfig Speculating(SchedulerConfig config, int32_t tokens = 4) const {
    config.speculative = {.method = method_,
                          .num_speculative_tokens = tokens,
                          .prompt_lookup_min = 1,
                          .prompt_lookup_max = 3};
    if (method_ == SpeculativeMethod::kDraftModel) config.speculative.model = TinyDraftModelDir();
    return config;
  }

  // Submits every request at once and steps until all have ended.
  Results RunAll(const SchedulerConfig& config, const std::vector<Request>& requests) {
    auto scheduler = NewScheduler(config);
    std::vector<RequestHandle> handles;
    for (const Request& request : requests) handles.push_back(scheduler->Submit(request).value());
    Results run;
    run.outcomes.resize(requests.size());
    while (scheduler->HasWork()) {
      auto report = scheduler->Step();
      EXPECT_TRUE(report.ok()) << report.status();
      for (size_t i = 0; i < handles.size(); ++i) Drain(handles[i], run.outcomes[i]);
    }
    run.metrics = scheduler->Metrics();
    EXPECT_EQ(run.metrics.kv_blocks_free, run.metrics.kv_blocks_total) << "blocks leaked";
    return run;
  }

  // The same requests with and without drafts: equal outputs, and drafts both kept and refused,
  // in fewer steps unless `fewer_steps` is false (a cache too crowded for draft models' caches).
  // Returns the run with drafts.
  Results ExpectSameOutputs(const SchedulerConfig& config, const std::vector<Request>& requests,
                            int32_t draft_tokens = 4, bool fewer_steps = true) {
    const Results plain = RunAll(config, requests);
    Results speculative = RunAll(Speculating(config, draft_tokens), requests);
    for (size_t i = 0; i < requests.size(); ++i) {
      const Outcome& a = plain.outcomes[i];
      const Outcome& b = speculative.outcomes[i];
      EXPECT_TRUE(a.ended && b.ended) << "request " << i;
      if (!a.ended || !b.ended) continue;
      EXPECT_TRUE(a.status.ok()) << a.status;
      EXPECT_TRUE(b.status.ok()) << b.status;
      EXPECT_EQ(a.tokens, b.tokens) << "request " << i;
      EXPECT_EQ(a.text, b.text) << "request " << i;
      EXPECT_EQ(a.finish, b.finish) << "request " << i;
      EXPECT_EQ(a.stop_string, b.stop_string) << "request " << i;
      EXPECT_EQ(a.usage.completion_tokens, b.usage.completion_tokens) << "request " << i;
      EXPECT_EQ(a.logprobs.size(), b.logprobs.size());
      for (size_t choice = 0; choice < std::min(a.logprobs.size(), b.logprobs.size()); ++choice) {
        EXPECT_EQ(a.logprobs[choice].size(), b.logprobs[choice].size());
        if (a.logprobs[choice].size() != b.logprobs[choice].size()) continue;
        for (size_t t = 0; t < a.logprobs[choice].size(); ++t) {
          EXPECT_NEAR(a.logprobs[choice][t], b.logprobs[choice][t], 1e-4)
              << "request " << i << " choice " << choice;
        }
      }
    }
    EXPECT_EQ(plain.metrics.spec_decode_drafts, 0u);
    EXPECT_GT(speculative.metrics.spec_decode_accepted_tokens, 0u) << "no draft was ever kept";
    EXPECT_GT(speculative.metrics.spec_decode_draft_tokens,
              speculative.metrics.spec_decode_accepted_tokens)
        << "no draft was ever refused";
    if (fewer_steps) {
      EXPECT_LT(speculative.metrics.steps, plain.metrics.steps) << "drafts saved no step";
    }
    EXPECT_EQ(speculative.metrics.generation_tokens, plain.metrics.generation_tokens);
    uint64_t kept_by_position = 0;
    for (uint64_t kept : speculative.metrics.spec_decode_accepted_per_position) {
      kept_by_position += kept;
    }
    EXPECT_EQ(kept_by_position, speculative.metrics.spec_decode_accepted_tokens);
    return speculative;
  }

  // A question about a document in the prompt, as the bundled model was trained to answer:
  // the answer copies the document's value for the key, which ends before the draft does.
  static Request QuestionAboutADocument(std::mt19937& random, int32_t max_tokens,
                                        size_t document_bytes = 400) {
    const auto document = cache_store::testing::MakeKeyValueDocument(random, document_bytes);
    const std::string& key =
        document
            .records[std::uniform_int_distribution<size_t>(0, document.records.size() - 1)(random)]
            .first;
    Request request =
        Greedy(tokenizer_->Encode("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n" +
                                      document.text + "\n\nQ:" + key +
                                      "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
                                  /*add_special_tokens=*/false),
               max_tokens);
    request.ignore_eos = false;
    return request;
  }

  // A prompt that says the same thing twice, so that its continuation has something to copy.
  static std::vector<int32_t> RepeatingPrompt(std::mt19937& random, int32_t length) {
    std::vector<int32_t> prompt = RandomPrompt(random, length);
    const std::vector<int32_t> once(prompt.begin() + 1, prompt.end());
    prompt.insert(prompt.end(), once.begin(), once.end());
    prompt.insert(prompt.end(), once.begin(), once.begin() + length / 2);
    return prompt;
  }

  // A small JSON object (a short string and a few integers), compact, for constrained outputs.
  static std::shared_ptr<const structured::Constraint> SmallObjectConstraint() {
    static const auto* trie = new std::shared_ptr<const structured::TokenTrie>(
        structured::TokenTrie::Create(*tokenizer_, {873, 870}).value());
    return std::make_shared<const structured::Constraint>(
        structured::CompileJsonSchema(
            structured::JsonValue::parse(
                R"({"type": "object", "properties": {"a": {"type": "string", "maxLength": 12},
                    "b": {"type": "array", "items": {"type": "integer"}, "maxItems": 6}},
                    "required": ["a", "b"], "additionalProperties": false})"),
            structured::JsonWhitespace::kCompact)
            .value(),
        *trie);
  }

  SpeculativeMethod method_ = SpeculativeMethod::kNgram;
};

}  // namespace kvd::scheduler::testing
