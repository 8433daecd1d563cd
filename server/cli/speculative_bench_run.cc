#include "server/cli/speculative_bench_run.h"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bench/speculative_questions.h"
#include "server/cli/document_setup.h"

namespace kvd::server {

absl::Status RunSpeculativeBench(const SpeculativeBenchRun& run, engine::Model& model) {
  bench::SpeculativeBenchOptions options = run.options;
  const bool draft_model = !options.speculative.model.empty();
  options.speculative.method = draft_model ? scheduler::SpeculativeMethod::kDraftModel
                                           : scheduler::SpeculativeMethod::kNgram;
  const std::string drafter =
      draft_model ? absl::StrCat("draft model ", options.speculative.model)
                  : absl::StrCat("ngram drafts, n-grams ", options.speculative.prompt_lookup_min,
                                 "..", options.speculative.prompt_lookup_max);
  const char* const drafts_column = draft_model ? "model" : "ngram";
  std::unique_ptr<DocumentSetup> setup;
  if (!run.questions_path.empty()) {
    std::ifstream file(run.questions_path, std::ios::binary);
    if (!file) return absl::NotFoundError(absl::StrCat("cannot read ", run.questions_path));
    const std::string text((std::istreambuf_iterator<char>(file)), {});
    absl::StatusOr<std::vector<bench::SpeculativeQuestions>> documents =
        bench::ParseSpeculativeQuestions(text, run.documents);
    if (!documents.ok()) return documents.status();
    options.documents = *std::move(documents);
    absl::StatusOr<std::unique_ptr<DocumentSetup>> loaded = LoadDocumentSetup(run.model_dir, "");
    if (!loaded.ok()) return loaded.status();
    setup = *std::move(loaded);
    options.pipeline = setup->pipeline();
    options.prompts = &setup->prompts;
  }
  absl::StatusOr<std::vector<bench::SpeculativeBenchResult>> results =
      bench::MeasureSpeculativeDecoding(model, options);
  if (!results.ok()) return results.status();
  size_t questions = 0;
  for (const bench::SpeculativeQuestions& document : options.documents) {
    questions += document.questions.size();
  }
  const std::string workload =
      options.documents.empty()
          ? absl::StrCat(options.random_requests, " random prompts of ", options.prompt_tokens,
                         " tokens",
                         options.prompt_vocab > 0
                             ? absl::StrCat(" among the first ", options.prompt_vocab, " ids")
                             : "",
                         ", end-of-sequence ignored")
          : absl::StrCat(questions, " questions about ", options.documents.size(),
                         " stored documents of ", run.questions_path);
  std::printf(
      "model %s, %s, %s, at most %d tokens each; %s, up to %d tokens a step; median of %d "
      "interleaved rounds\n",
      run.model_dir.c_str(), workload.c_str(),
      options.temperature > 0.0f
          ? absl::StrFormat("temperature %.2f, seeded", options.temperature).c_str()
          : "greedy",
      options.max_tokens, drafter.c_str(), options.speculative.num_speculative_tokens,
      options.rounds);
  std::printf(
      "| batch | drafts | decode tok/s per stream (rounds) | tok/s, prefill included | steps | "
      "tokens | draft tokens | kept | same tokens "
      "|\n|---:|---|---:|---:|---:|---:|---:|---:|---|\n");
  for (const bench::SpeculativeBenchResult& result : *results) {
    std::vector<std::string> rounds;
    for (double value : result.decode_rounds) {
      rounds.push_back(value < 100 ? absl::StrFormat("%.2f", value)
                                   : absl::StrFormat("%.0f", value));
    }
    std::printf(
        "| %d | %s | %.1f (%s) | %.1f | %lld | %lld | %lld | %s | %s |\n", result.batch,
        result.speculative ? drafts_column : "none", result.decode_tokens_per_second,
        absl::StrJoin(rounds, ", ").c_str(), result.tokens_per_second,
        static_cast<long long>(result.steps), static_cast<long long>(result.tokens),
        static_cast<long long>(result.draft_tokens),
        result.speculative
            ? absl::StrCat(static_cast<int>(100.0 * result.accepted_fraction + 0.5), "%").c_str()
            : "",
        !result.speculative || result.same_tokens   ? "yes"
        : draft_model && options.temperature > 0.0f ? "no (sampled: the same distribution)"
                                                    : "NO");
  }
  return absl::OkStatus();
}

}  // namespace kvd::server
